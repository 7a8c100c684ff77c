// Operator login/logout (form or JSON) and API token minting for `muster login`.
import { Elysia } from 'elysia'
import { SESSION_COOKIE, SESSION_TTL_MS, readCookie } from '../../auth/auth.ts'
import { ROLE_PERMISSIONS, VOUCHED_WITHHELD } from '../../wire/permissions.ts'
import { Login, MintToken, TokenId, type LoginAnswer, type Whoami } from '../../wire/accounts.ts'
import { listForCaller, mintForCaller, revokeForCaller } from '../../auth/api-tokens.ts'
import type { Services } from '../services.ts'
import { parseBody } from '../../wire/validate.ts'
import { isJson } from '../request.ts'
import { peerAddress } from '../peer.ts'
import { throttledLogin } from '../../auth/throttle.ts'
import { ACCOUNT_NAME } from '../../auth/auth.ts'
import { getAccount } from '../../store/accounts.ts'
import { noteAudit } from '../audit-hook.ts'

export const authRoutes = (platform: Services) => {
  const caller = (request: Request) => platform.auth.requireOperator(request.headers)
  return new Elysia({ name: 'routes/auth' })
    // Origin (login CSRF) and the local door are checked in app.ts before the body is read.
    .post('/login', async ({ body, request }) => {
      const { identifier, password } = parseBody(Login, body)
      let sessionId: string
      let account: string
      try {
        ;({ sessionId, account } = await throttledLogin(platform.auth.throttle, peerAddress(request), identifier, () => platform.auth.login(identifier, password)))
      } catch (e) {
        // The audit names the account tried (as the target, never the principal: whoever tried is unknown) only when
        // it exists: an unknown "name" may be a password typed in the wrong field.
        if (ACCOUNT_NAME.test(identifier) && (await getAccount(platform.auth.store, identifier))) noteAudit(request, { target: identifier })
        throw e
      }
      noteAudit(request, { who: { principal: account, kind: 'session' }, target: account })
      const cookie = sessionCookie(sessionId, platform.secure, SESSION_TTL_MS / 1000)
      if (!isJson(request)) return new Response(null, { status: 303, headers: { location: '/', 'set-cookie': cookie } })
      const answer: LoginAnswer = { ok: true, account }
      return new Response(JSON.stringify(answer), { headers: { 'content-type': 'application/json', 'set-cookie': cookie } })
    })
    .post('/logout', async ({ request }) => {
      const sid = readCookie(request.headers.get('cookie'), SESSION_COOKIE)
      // Without a live session (an API token, a stale cookie) a logout changes nothing: the audit keeps it apart from actions.
      if (!sid || !(await platform.auth.logout(sid))) noteAudit(request, { unchanged: true })
      return new Response(JSON.stringify({ ok: true }), {
        headers: { 'content-type': 'application/json', 'set-cookie': sessionCookie('', platform.secure, 0) },
      })
    })
    .get('/api/v1/whoami', async ({ request }) => {
      const p = await caller(request)
      // permissions: what the dashboard offers (it still asks the Platform, which checks every call).
      const answer: Whoami = { name: p.name, account: p.account, role: p.role, kind: p.kind, permissions: [...ROLE_PERMISSIONS[p.role]].filter((x) => !(p.vouched && VOUCHED_WITHHELD.has(x))) }
      return answer
    })
    .post('/api/v1/api-tokens', async ({ body, request }) => {
      const p = await caller(request)
      return mintForCaller(platform.auth, p, platform.auth.now(), parseBody(MintToken, body))
    })
    .get('/api/v1/api-tokens', async ({ request }) => listForCaller(platform.auth, await caller(request), platform.auth.now()))
    .delete('/api/v1/api-tokens/:id', async ({ params, request }) => {
      const p = await caller(request)
      return revokeForCaller(platform.auth, p, platform.auth.now(), parseBody(TokenId, { id: params.id }).id)
    })
}

export function sessionCookie(value: string, secure: boolean, maxAge: number): string {
  return `${SESSION_COOKIE}=${value}; Path=/; HttpOnly; SameSite=Strict; Max-Age=${Math.floor(maxAge)}${secure ? '; Secure' : ''}`
}
