// `muster login --sso` for the CLI: a sign-in at the identity provider that
// ends, as a password login does, in a token minted with the session. The
// Platform holds the client secret and redeems the provider's code; the CLI
// proves it started the flow with its own PKCE verifier (docs/accounts-audit.md).
import { createHash, randomBytes } from 'node:crypto'
import { MusterError } from '../errors.ts'
import type { PollDeviceSignInAnswer, SsoSignedIn, StartCliSignInAnswer, StartDeviceSignInAnswer } from '../wire/oidc.ts'
import { cookieTransport, mintWithSession, type Fetch } from './login.ts'

const b64url = (b: Uint8Array) => Buffer.from(b).toString('base64url')
const LOOPBACK_WAIT_MS = 5 * 60_000

const DONE_PAGE = (ok: boolean) => `<!doctype html><meta charset="utf-8"><title>muster</title><body style="font-family:sans-serif;margin:3em"><h1>${ok ? 'Signed in' : 'Sign-in refused'}</h1><p>${ok ? 'You can close this tab and go back to the terminal.' : 'muster refused this sign-in; the terminal says more.'}</p></body>`

/**
 * Loopback (RFC 8252):
 *   1. a one-shot server on 127.0.0.1 (a free port), a state and a PKCE verifier of the CLI's own
 *   2. the Platform starts the flow and gives the provider's URL; `open` shows it in a browser
 *   3. the browser comes back to the loopback with a one-time grant and the state
 *   4. the grant and the verifier buy a session; the session mints the saved token
 */
export async function ssoLoginLoopback(url: string, tokenName: string, open: (authUrl: string) => Promise<void>, fetchImpl: Fetch = (u, i) => fetch(u, i), waitMs = LOOPBACK_WAIT_MS) {
  const verifier = b64url(randomBytes(32))
  const state = b64url(randomBytes(32))
  const codeChallenge = createHash('sha256').update(verifier).digest('base64url')
  let settle!: (r: { grant: string } | { error: string }) => void
  const result = new Promise<{ grant: string } | { error: string }>((resolve) => (settle = resolve))
  const server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    fetch(req) {
      const u = new URL(req.url)
      if (u.pathname !== '/callback') return new Response('Not found', { status: 404 })
      // Only the redirect of this flow counts: another state is someone else's (or an attack).
      if (u.searchParams.get('state') !== state) return new Response('Unknown sign-in', { status: 400 })
      const grant = u.searchParams.get('grant')
      settle(grant ? { grant } : { error: u.searchParams.get('error') ?? 'no grant' })
      return new Response(DONE_PAGE(Boolean(grant)), { headers: { 'content-type': 'text/html; charset=utf-8', connection: 'close' } })
    },
  })
  try {
    const { call, jar } = cookieTransport(url, fetchImpl)
    const start = await call<StartCliSignInAnswer>('POST', '/auth/oidc/cli', { redirectUri: `http://127.0.0.1:${server.port}/callback`, state, codeChallenge })
    await open(start.url)
    let timer: ReturnType<typeof setTimeout> | undefined
    const r = await Promise.race([result, new Promise<null>((resolve) => (timer = setTimeout(() => resolve(null), waitMs)))])
    clearTimeout(timer)
    if (!r) throw new MusterError('unavailable', `No sign-in came back within ${Math.round(waitMs / 60_000)} minutes; run \`muster login --sso\` again (or --device where no browser can reach this machine).`)
    if ('error' in r) throw new MusterError('login-refused', 'Sign-in refused by muster; ask an administrator to look at the audit (muster audit --action sso).')
    const signed = await call<SsoSignedIn>('POST', '/auth/oidc/cli/redeem', { grant: r.grant, codeVerifier: verifier })
    return { account: signed.account, ...(await mintWithSession(url, jar.cookie, tokenName, fetchImpl)) }
  } finally {
    // The browser gets its page first (a refusal ends this function at once), then the port closes.
    await Promise.race([server.stop(), Bun.sleep(2000)])
    server.stop(true)
  }
}

/** Device grant (RFC 8628): `show` tells the user where to go and which code to enter; then the CLI polls. */
export async function ssoLoginDevice(url: string, tokenName: string, show: (d: StartDeviceSignInAnswer) => void, fetchImpl: Fetch = (u, i) => fetch(u, i)) {
  const { call, jar } = cookieTransport(url, fetchImpl)
  const d = await call<StartDeviceSignInAnswer>('POST', '/auth/oidc/device')
  show(d)
  const deadline = Date.now() + d.expiresIn * 1000
  let interval = Math.max(1, d.interval)
  for (;;) {
    if (Date.now() > deadline) throw new MusterError('unavailable', 'The code expired before the sign-in was confirmed; run `muster login --sso --device` again.')
    await Bun.sleep(interval * 1000)
    const r = await call<PollDeviceSignInAnswer>('POST', '/auth/oidc/device/poll', { handle: d.handle })
    if ('pending' in r) {
      if (r.slowDown) interval += 5
      continue
    }
    return { account: r.account, ...(await mintWithSession(url, jar.cookie, tokenName, fetchImpl)) }
  }
}
