// Sign-in with the identity provider (docs/accounts-audit.md): the dashboard's
// redirects (start, callback) and the CLI's loopback and device flows. Each
// ends in an ordinary muster session cookie.
import { Elysia } from 'elysia'
import { FLOW_COOKIE, type SsoSession } from '../../sso/signin.ts'
import { readCookie } from '../../auth/auth.ts'
import { MusterError } from '../../errors.ts'
import type { Services } from '../services.ts'
import { parseBody } from '../../wire/validate.ts'
import { peerAddress } from '../peer.ts'
import { PollDeviceSignIn, RedeemCliSignIn, StartCliSignIn, type SsoInfo } from '../../wire/oidc.ts'
import { sessionCookie } from './auth.ts'

const notConfigured = () => new MusterError('not-found', 'Sign-in with an identity provider is not set up on this Platform (serve --oidc-issuer …).')

/** The flow cookie: sent back on the provider's top-level redirect (Lax), only to /auth/oidc. */
function flowCookie(value: string, secure: boolean, maxAgeS: number): string {
  return `${FLOW_COOKIE}=${value}; Path=/auth/oidc; HttpOnly; SameSite=Lax; Max-Age=${maxAgeS}${secure ? '; Secure' : ''}`
}

const redirect = (location: string, cookies: string[] = []) => {
  const headers = new Headers({ location, 'cache-control': 'no-store', 'referrer-policy': 'no-referrer' })
  for (const c of cookies) headers.append('set-cookie', c)
  return new Response(null, { status: 303, headers })
}

export const oidcRoutes = (platform: Services) => {
  const sso = () => {
    if (!platform.sso) throw notConfigured()
    return platform.sso
  }
  const signedIn = (s: SsoSession) =>
    new Response(JSON.stringify({ ok: true, account: s.account, role: s.role, expiresAt: new Date(s.expiresAt).toISOString() }), {
      headers: { 'content-type': 'application/json', 'cache-control': 'no-store', 'set-cookie': sessionCookie(s.sessionId, platform.secure, (s.expiresAt - platform.now()) / 1000) },
    })
  return new Elysia({ name: 'routes/oidc' })
    .get('/auth/oidc/info', async (): Promise<SsoInfo> => {
      const s = platform.sso
      const joined = Boolean((await platform.auth.door()).membership)
      return { enabled: Boolean(s) && !joined, name: s?.displayName ?? null, passwordLogin: !platform.auth.passwordOff, deviceFlow: Boolean(s?.client.deviceFlow) }
    })
    // 1. (dashboard) a flow bound to this browser, then off to the provider
    .get('/auth/oidc/start', async () => {
      let started: { url: string; cookie: string }
      try {
        started = await sso().startWeb()
      } catch (e) {
        if (e instanceof MusterError) return redirect(`/?sso=${e.code === 'local-login-disabled' ? 'office' : e.code === 'rate-limited' ? 'busy' : 'off'}`)
        throw e
      }
      return redirect(started.url, [flowCookie(started.cookie, platform.secure, 600)])
    })
    // 3. the provider's redirect back (the redirect URI to register: <public URL>/auth/oidc/callback)
    .get('/auth/oidc/callback', async ({ request }) => {
      const clear = flowCookie('', platform.secure, 0)
      try {
        const r = await sso().callback(new URL(request.url), readCookie(request.headers.get('cookie'), FLOW_COOKIE), peerAddress(request))
        if ('cli' in r) return redirect(r.cli)
        return redirect('/', [clear, sessionCookie(r.web.sessionId, platform.secure, (r.web.expiresAt - platform.now()) / 1000)])
      } catch (e) {
        if (e instanceof MusterError) return redirect(`/?sso=${e.code === 'local-login-disabled' ? 'office' : 'refused'}`, [clear])
        throw e
      }
    })
    .post('/auth/oidc/cli', async ({ body }) => sso().startCli(parseBody(StartCliSignIn, body)))
    .post('/auth/oidc/cli/redeem', async ({ body, request }) => signedIn(await sso().redeemCli(parseBody(RedeemCliSignIn, body), peerAddress(request))))
    .post('/auth/oidc/device', async () => sso().startDevice())
    .post('/auth/oidc/device/poll', async ({ body, request }) => {
      const r = await sso().pollDevice(parseBody(PollDeviceSignIn, body).handle, peerAddress(request))
      return 'pending' in r ? r : signedIn(r)
    })
}
