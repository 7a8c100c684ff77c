// Operator login/logout (form or JSON) and API token minting for `muster login`.
import { Elysia } from 'elysia'
import * as v from 'valibot'
import { SESSION_COOKIE, SESSION_TTL_MS, readCookie } from '../../auth/auth.ts'
import { ROLES, roleCan } from '../../auth/permissions.ts'
import { MusterError } from '../../errors.ts'
import type { Services } from '../../services.ts'
import { parseBody } from '../validate.ts'
import { isJson } from '../request.ts'
import { peerAddress } from '../peer.ts'
import { throttledLogin } from '../../auth/throttle.ts'

const Login = v.object({
  identifier: v.pipe(v.string(), v.minLength(1), v.maxLength(256)),
  password: v.pipe(v.string(), v.minLength(1), v.maxLength(1024)),
})
const MintToken = v.object({
  name: v.optional(v.pipe(v.string(), v.regex(/^[\w .@-]{1,64}$/, 'expected 1–64 letters, digits, spaces or ._@-'))),
  role: v.optional(v.picklist(ROLES)),
})

export const authRoutes = (platform: Services) =>
  new Elysia({ name: 'routes/auth' })
    // Origin (login CSRF) and the local door are checked in app.ts before the body is read.
    .post('/login', async ({ body, request }) => {
      const { identifier, password } = parseBody(Login, body)
      const { sessionId, account } = await throttledLogin(platform.auth.throttle, peerAddress(request), identifier, () => platform.auth.login(identifier, password))
      const cookie = sessionCookie(sessionId, platform.secure, SESSION_TTL_MS / 1000)
      if (!isJson(request)) return new Response(null, { status: 303, headers: { location: '/', 'set-cookie': cookie } })
      return new Response(JSON.stringify({ ok: true, account }), { headers: { 'content-type': 'application/json', 'set-cookie': cookie } })
    })
    .post('/logout', async ({ request }) => {
      const sid = readCookie(request.headers.get('cookie'), SESSION_COOKIE)
      if (sid) await platform.auth.logout(sid)
      return new Response(JSON.stringify({ ok: true }), {
        headers: { 'content-type': 'application/json', 'set-cookie': sessionCookie('', platform.secure, 0) },
      })
    })
    .get('/api/v1/whoami', async ({ request }) => {
      const p = await platform.auth.authenticate(request.headers)
      if (!p) throw new MusterError('unauthorized', 'Authentication required.')
      return { name: p.name, account: p.account, role: p.role, kind: p.kind }
    })
    .post('/api/v1/api-tokens', async ({ body, request }) => {
      const p = await platform.auth.authenticate(request.headers)
      if (!p) throw new MusterError('unauthorized', 'Authentication required.')
      const b = parseBody(MintToken, body)
      const role = b.role ?? p.role
      // A principal can mint a token of its own role or a lesser one, never more.
      if (role !== p.role && !roleCan(p.role, 'server.accounts.manage')) throw new MusterError('forbidden', 'Permission server.accounts.manage is required to mint a token of another role.')
      if (role === 'superadmin' && p.role !== 'superadmin') throw new MusterError('forbidden', 'Only a superadmin can mint a superadmin token.')
      const { token } = await platform.auth.mintApiToken({ name: b.name ?? `${p.name}-cli`, role, account: p.account })
      return { token, name: b.name ?? `${p.name}-cli`, role }
    })

export function sessionCookie(value: string, secure: boolean, maxAge: number): string {
  return `${SESSION_COOKIE}=${value}; Path=/; HttpOnly; SameSite=Strict; Max-Age=${Math.floor(maxAge)}${secure ? '; Secure' : ''}`
}
