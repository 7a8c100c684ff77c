// The Platform's HTTP application: error mapping to the SPEC's JSON shape, a
// JSON 404 for unknown routes, and every route module mounted in one place.
import { Elysia } from 'elysia'
import { MusterError } from '../errors.ts'
import { SESSION_COOKIE } from '../auth/auth.ts'
import { log } from '../log.ts'
import type { Services } from '../services.ts'
import { authRoutes } from './routes/auth.ts'
import { healthRoutes } from './routes/health.ts'
import { federationRoutes } from './routes/federation.ts'
import { nodeRoutes } from './routes/nodes.ts'
import { projectRoutes } from './routes/projects.ts'
import { cloudRoutes } from './routes/cloud.ts'
import { dashboardRoutes } from '../dashboard/routes.ts'

export function errorResponse(err: MusterError, extraHeaders?: Record<string, string>): Response {
  return new Response(JSON.stringify(err.toJSON()), {
    status: err.status,
    headers: { 'content-type': 'application/json', ...extraHeaders },
  })
}

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS'])

/**
 * A change made with the session cookie must come from this Platform's own
 * pages: an Origin, when sent, must be this host, and the body must be JSON
 * (a form or text body is what a page elsewhere can send without asking).
 * API tokens in the Authorization header are not sent by browsers on their own.
 */
function crossSiteWrite(request: Request, publicHost: string | undefined): MusterError | null {
  if (SAFE_METHODS.has(request.method) || request.headers.has('authorization')) return null
  if (!request.headers.get('cookie')?.includes(`${SESSION_COOKIE}=`)) return null
  const path = new URL(request.url).pathname
  const origin = request.headers.get('origin')
  const originHost = origin && origin !== 'null' ? new URL(origin).host : null
  const sameOrigin = !origin || (originHost !== null && (originHost === request.headers.get('host') || originHost === publicHost))
  const type = request.headers.get('content-type')
  const jsonOrEmpty = !type || type.startsWith('application/json')
  // /login checks its own Origin (it also takes forms); everything else needs both.
  if (path === '/login') return null
  if (sameOrigin && jsonOrEmpty) return null
  return new MusterError('forbidden', 'Cross-site request refused: changes made with a session must come from this Platform’s pages, as JSON.')
}

export function createApp(platform: Services) {
  return new Elysia({ name: 'muster' })
    .onRequest(async ({ request }) => {
      // A closed local door refuses password login before the body (the credential) is even parsed.
      if (request.method === 'POST' && request.url.endsWith('/login')) {
        const refusal = await platform.auth.loginRefusal()
        if (refusal) return errorResponse(refusal)
      }
      const forged = crossSiteWrite(request, platform.options.publicUrl ? new URL(platform.options.publicUrl).host : undefined)
      if (forged) return errorResponse(forged)
    })
    .onError(({ code, error }) => {
      if (error instanceof MusterError) {
        const headers: Record<string, string> = {}
        const retryAfter = error.detail?.retryAfterSeconds
        if (typeof retryAfter === 'number') headers['retry-after'] = String(Math.max(1, Math.ceil(retryAfter)))
        return errorResponse(error, headers)
      }
      if (code === 'NOT_FOUND') return errorResponse(new MusterError('not-found', 'No such route.'))
      if (code === 'PARSE') return errorResponse(new MusterError('invalid-request', 'Invalid body: not parseable as JSON or form data.', { field: 'body' }))
      if (code === 'VALIDATION') return errorResponse(new MusterError('invalid-request', 'Invalid request.'))
      log.error(`unhandled error: ${(error as Error)?.stack ?? String(error)}`)
      return errorResponse(new MusterError('internal', 'Internal error; see the Platform log.'))
    })
    .use(healthRoutes())
    .use(authRoutes(platform))
  // routes: fabric
    .use(nodeRoutes(platform))
  // routes: projects
    .use(projectRoutes(platform))
  // routes: federation
    .use(federationRoutes(platform))
  // routes: cloud
    .use(cloudRoutes(platform))
    .use(dashboardRoutes(platform))
}
