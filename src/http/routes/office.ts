// Office routes: vouch redemption (anonymous: the vouch is the credential),
// signed controller calls (anonymous: the signature is), and the office's own
// records for its operators.
import { Elysia } from 'elysia'
import * as v from 'valibot'
import { localAuthority } from '../../federation/membership.ts'
import { handleControllerCall, identityWrites, placedProjects, redeemVouch } from '../../federation/office.ts'
import { federationOf } from '../../federation/service.ts'
import { ControllerCall } from '../../federation/wire.ts'
import type { Platform } from '../../platform.ts'
import { SESSION_TTL_MS } from '../../auth/auth.ts'
import { parseBody } from '../validate.ts'
import { sessionCookie } from './auth.ts'

const Redeem = v.object({ vouch: v.pipe(v.string(), v.maxLength(1024)) })

export const officeRoutes = (platform: Platform) => {
  const view = (headers: Headers) => platform.auth.require(headers, 'server.federation.view')
  const cookieFor = (sessionId: string) => sessionCookie(sessionId, platform.secure, SESSION_TTL_MS / 1000)
  return new Elysia({ name: 'routes/office' })
    .post('/api/office/vouch', ({ body }) => {
      const r = redeemVouch(platform, parseBody(Redeem, body).vouch)
      return new Response(JSON.stringify({ ok: true, account: r.account, created: r.created }), {
        headers: { 'content-type': 'application/json', 'set-cookie': cookieFor(r.sessionId) },
      })
    })
    .get('/office/vouch', ({ query }) => {
      const r = redeemVouch(platform, parseBody(v.object({ v: v.pipe(v.string(), v.maxLength(1024)) }), query).v)
      return new Response(null, { status: 303, headers: { location: '/', 'set-cookie': cookieFor(r.sessionId) } })
    })
    .post('/api/office/calls', ({ body }) => handleControllerCall(platform, parseBody(ControllerCall, body), (body as { payload?: unknown }).payload))
    .get('/api/v1/office/local-authority', ({ request }) => {
      view(request.headers)
      const link = federationOf(platform).link
      return {
        ...localAuthority(platform.dataDir, platform.db),
        controller: link ? { url: link.config.controllerUrl ?? null, state: link.state, lastContactAt: link.lastContactAt === null ? null : new Date(link.lastContactAt).toISOString() } : null,
      }
    })
    .get('/api/v1/office/identity-writes', ({ request }) => {
      view(request.headers)
      return identityWrites(platform)
    })
    .get('/api/v1/office/projects', ({ request }) => {
      view(request.headers)
      return placedProjects(platform)
    })
}
