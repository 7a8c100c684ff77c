// The Platform's HTTP application: error mapping to the SPEC's JSON shape, a
// JSON 404 for unknown routes, and every route module mounted in one place.
import { Elysia } from 'elysia'
import { MusterError } from '../errors.ts'
import { SESSION_COOKIE, bearerToken } from '../auth/auth.ts'
import { fields, log } from '../log.ts'
import type { Services } from './services.ts'
import { isJson, isPath, joinTokenAsBearer, malformedRequest, mediaType, sameOrigin } from './request.ts'
import { authRoutes } from './routes/auth.ts'
import { healthRoutes } from './routes/health.ts'
import { federationRoutes } from './routes/federation.ts'
import { nodeRoutes } from './routes/nodes.ts'
import { projectRoutes } from './routes/projects.ts'
import { logRoutes } from './routes/logs.ts'
import { cloudRoutes } from './routes/cloud.ts'
import { overviewRoutes } from './routes/overview.ts'
import { bootstrapRoutes } from './routes/bootstrap.ts'
import { dashboardRoutes } from '../dashboard/routes.ts'
import { accountRoutes } from './routes/accounts.ts'
import { auditRoutes } from './routes/audit.ts'
import { releaseRoutes } from './routes/releases.ts'
import { oidcRoutes } from './routes/oidc.ts'
import { metricsRoutes } from './routes/metrics.ts'
import { noteRoute, requestId } from './request-metrics.ts'

export function errorResponse(err: MusterError, extraHeaders?: Record<string, string>): Response {
  return new Response(JSON.stringify(err.toJSON()), {
    status: err.status,
    headers: { 'content-type': 'application/json', ...extraHeaders },
  })
}

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS'])
const FOREIGN_LOGIN = 'Login forms are accepted only from this Platform’s own pages.'
/**
 * Routes whose credential is in the body (a password, a vouch, a finished sign-in's CLI grant or device handle):
 * a form posting one signs the browser in, as whoever the credential belongs to.
 */
const CREDENTIAL_IN_BODY = ['/login', '/office/vouch', '/api/office/vouch', '/auth/oidc/cli/redeem', '/auth/oidc/device/poll']

/**
 * Requests a page on another site could make a browser send (CSRF):
 * - POST /login, a vouch's redemption (POST /office/vouch, /api/office/vouch)
 *   and the CLI's end of a sign-in with the identity provider (POST
 *   /auth/oidc/cli/redeem, /auth/oidc/device/poll: an attacker's own grant or
 *   device handle, each answered with a session cookie) in any shape but JSON
 *   (a form, multipart or text) must come from this Platform's pages, or a page
 *   elsewhere logs the browser in as the attacker (login CSRF);
 * - a change made with the session cookie must come from this Platform's pages
 *   and be JSON (or bodiless).
 * API tokens (Authorization: Bearer) are not sent by browsers on their own; other Authorization schemes are.
 * A malformed or opaque (`null`) Origin counts as foreign: 403, never a parse error.
 */
function crossSiteWrite(request: Request, publicHost: string | undefined): MusterError | null {
  if (SAFE_METHODS.has(request.method)) return null
  if (CREDENTIAL_IN_BODY.some((path) => isPath(request, path))) {
    // A browser tells where a form came from (Sec-Fetch-Site) even when its Origin is hidden: only this Platform's own pages.
    const site = request.headers.get('sec-fetch-site')
    const foreign = !sameOrigin(request, publicHost) || (site !== null && site !== 'same-origin' && site !== 'none')
    return request.method === 'POST' && !isJson(request) && foreign ? new MusterError('forbidden', FOREIGN_LOGIN) : null
  }
  // Only an API token (Bearer) replaces the cookie as the credential; any other Authorization (a proxy's Basic
  // credentials, which the browser adds by itself, even to a form posted from a sibling site) leaves the cookie acting.
  if (bearerToken(request.headers)) return null
  if (!request.headers.get('cookie')?.includes(`${SESSION_COOKIE}=`)) return null
  if (sameOrigin(request, publicHost) && (mediaType(request) === '' || isJson(request))) return null
  return new MusterError('forbidden', 'Cross-site request refused: changes made with a session must come from this Platform’s pages, as JSON.')
}

export function createApp(platform: Services) {
  const publicHost = platform.options.publicUrl && URL.canParse(platform.options.publicUrl) ? new URL(platform.options.publicUrl).host : undefined
  return new Elysia({ name: 'muster' })
    .onRequest(async ({ request }) => {
      const malformed = malformedRequest(request)
      if (malformed) return errorResponse(malformed)
      const forged = crossSiteWrite(request, publicHost)
      if (forged) return errorResponse(forged)
      const joinToken = joinTokenAsBearer(request)
      if (joinToken) return errorResponse(joinToken)
      // A closed local door refuses password login before the body (the credential) is even parsed.
      if (request.method === 'POST' && isPath(request, '/login')) {
        const refusal = await platform.auth.loginRefusal()
        if (refusal) return errorResponse(refusal)
      }
    })
    // The matched route's template, for the request metrics (src/http/request-metrics.ts).
    .onTransform({ as: 'global' }, ({ request, route }) => noteRoute(request, route))
    .onError(({ code, error, request, route }) => {
      noteRoute(request, route)
      if (error instanceof MusterError) {
        const headers: Record<string, string> = {}
        const retryAfter = error.detail?.retryAfterSeconds
        if (typeof retryAfter === 'number') headers['retry-after'] = String(Math.max(1, Math.ceil(retryAfter)))
        return errorResponse(error, headers)
      }
      if (code === 'NOT_FOUND') return errorResponse(new MusterError('not-found', 'No such route.'))
      if (code === 'PARSE') return errorResponse(new MusterError('invalid-request', 'Invalid body: not parseable as JSON or form data.', { field: 'body' }))
      if (code === 'VALIDATION') return errorResponse(new MusterError('invalid-request', 'Invalid request.'))
      log.error(`unhandled error: ${(error as Error)?.stack ?? String(error)}`, fields({ request: requestId(request), route: route ?? null }))
      return errorResponse(new MusterError('internal', 'Internal error; see the Platform log.'))
    })
    .use(healthRoutes())
    .use(metricsRoutes(platform))
    .use(authRoutes(platform))
    .use(oidcRoutes(platform))
    .use(accountRoutes(platform))
    .use(auditRoutes(platform))
  // routes: fabric
    .use(nodeRoutes(platform))
    .use(bootstrapRoutes(platform))
  // routes: projects
    .use(projectRoutes(platform))
    .use(logRoutes(platform))
  // routes: federation
    .use(federationRoutes(platform))
  // routes: cloud
    .use(cloudRoutes(platform))
  // routes: releases and rollouts
    .use(releaseRoutes(platform))
  // routes: overview (dashboard)
    .use(overviewRoutes(platform))
    .use(dashboardRoutes())
}
