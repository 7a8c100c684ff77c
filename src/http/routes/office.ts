// Office routes: the vouch link's page and the vouch's redemption (a POST;
// anonymous: the vouch is the credential),
// signed controller calls (anonymous: the signature is), and the office's own
// records for its operators.
import { Elysia } from 'elysia'
import { localAuthority } from '../../federation/membership.ts'
import { handleControllerCall, identityWrites, placedProjects, redeemVouch } from '../../federation/office.ts'
import { ControllerCall, RedeemVouch, RedeemVouchForm, type OfficeLocalAuthority, type VouchRedeemed } from '../../wire/federation.ts'
import type { Services } from '../services.ts'
import { VOUCHED_SESSION_TTL_MS } from '../../auth/auth.ts'
import { parseBody } from '../../wire/validate.ts'
import { sessionCookie } from './auth.ts'
import { noteAudit } from '../audit-hook.ts'
import { vouchPage } from '../../federation/vouch-page.ts'


/** The audit entry of a redeemed vouch names the account it opened (and says when the vouch created it). */
function noted<R extends { account: string; created: boolean; role: string }>(request: Request, r: R): R {
  noteAudit(request, { who: { principal: r.account, kind: 'vouched-session' }, target: r.account, detail: `role=${r.role}${r.created ? ' account created' : ''}` })
  return r
}

export const officeRoutes = (platform: Services) => {
  const view = (headers: Headers) => platform.auth.require(headers, 'server.federation.view')
  const cookieFor = (sessionId: string) => sessionCookie(sessionId, platform.secure, VOUCHED_SESSION_TTL_MS / 1000)
  return new Elysia({ name: 'routes/office' })
    .post('/api/office/vouch', async ({ body, request }) => {
      const r = noted(request, await redeemVouch(platform.federation, parseBody(RedeemVouch, body).vouch))
      const answer: VouchRedeemed = { ok: true, account: r.account, created: r.created, role: r.role }
      return new Response(JSON.stringify(answer), {
        headers: { 'content-type': 'application/json', 'set-cookie': cookieFor(r.sessionId) },
      })
    })
    // The link a vouch travels in: a page that spends nothing; its button POSTs the vouch (docs/federation.md).
    .get('/office/vouch', ({ query }) => vouchPage(platform.ctx.dataDir, parseBody(RedeemVouchForm, query).v, platform.now()))
    // The redemption from that page (a form from this origin only: app.ts refuses it from anywhere else).
    .post('/office/vouch', async ({ body, request }) => {
      const r = noted(request, await redeemVouch(platform.federation, parseBody(RedeemVouchForm, body).v))
      return new Response(null, { status: 303, headers: { location: '/', 'set-cookie': cookieFor(r.sessionId) } })
    })
    .post('/api/office/calls', ({ body }) => handleControllerCall(platform.federation, parseBody(ControllerCall, body), (body as { payload?: unknown }).payload))
    .get('/api/v1/office/local-authority', async ({ request }) => {
      await view(request.headers)
      const link = platform.federation.link
      const answer: OfficeLocalAuthority = {
        ...(await localAuthority(platform.ctx.dataDir, platform.ctx.store)),
        controller: link ? { url: link.config.controllerUrl ?? null, state: link.state, lastContactAt: link.lastContactAt === null ? null : new Date(link.lastContactAt).toISOString() } : null,
      }
      return answer
    })
    .get('/api/v1/office/identity-writes', async ({ request }) => {
      await view(request.headers)
      return identityWrites(platform.federation)
    })
    .get('/api/v1/office/projects', async ({ request }) => {
      await view(request.headers)
      return placedProjects(platform.federation)
    })
}
