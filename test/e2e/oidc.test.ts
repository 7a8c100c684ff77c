// Sign-in with an OpenID provider through dist/muster, against a real
// provider (oidc-provider, in this process): the redirect flow with a scripted
// browser, `muster login --sso` through the loopback redirect and through the
// device flow, accounts that follow the provider's groups, and the attacks a
// relying party must refuse (a replayed code, a swapped state, a code injected
// into another browser, a user whose groups map to nothing).
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { runMuster, startMuster } from '../helpers/binary.ts'
import { ScriptedBrowser } from '../helpers/oidc-browser.ts'
import { startOidcPlatform, type OidcPlatform } from '../helpers/oidc-fixture.ts'
import { waitFor } from '../helpers/tmp.ts'

let p: OidcPlatform
let admin: string
const scratch = mkdtempSync(join(tmpdir(), 'muster-oidc-e2e-'))

beforeAll(async () => {
  // ID tokens that live two days: muster's sessions still end after 12 hours.
  p = await startOidcPlatform({ idTokenTtlSeconds: 2 * 86400 })
  const minted = await runMuster(['admin', 'api-token', '--data-dir', p.dataDir, '--name', 'test-admin', '--role', 'superadmin', '--json'])
  expect(minted.code).toBe(0)
  admin = JSON.parse(minted.stdout).token
})
afterAll(async () => {
  await p?.close()
  rmSync(scratch, { recursive: true, force: true })
})

const api = (path: string, init: RequestInit & { token?: string } = {}) =>
  fetch(`${p.url}${path}`, { ...init, redirect: 'manual', headers: { ...(init.token ? { authorization: `Bearer ${init.token}` } : {}), ...(init.headers as Record<string, string>) } })

async function audit(action: string): Promise<{ principal: string; action: string; outcome: string; target: string | null; detail: string | null }[]> {
  const r = await runMuster(['audit', '--action', action, '--json'], { env: { MUSTER_URL: p.url, MUSTER_TOKEN: admin } })
  expect(r.code).toBe(0)
  return JSON.parse(r.stdout).entries
}

async function account(name: string) {
  const r = await (await api('/api/v1/accounts', { token: admin })).json()
  return (r.accounts as { name: string; role: string; origin: string; hasPassword: boolean; sessions: number }[]).find((a) => a.name === name)
}

/** The dashboard's flow by hand: start (flow cookie), sign in at the provider, stop at the callback. */
async function startAndSignIn(b: ScriptedBrowser, login: string, password: string): Promise<string> {
  const start = await b.request(`${p.url}/auth/oidc/start`)
  expect(start.status).toBe(303)
  return b.signIn(start.headers.get('location')!, login, password, p.callback)
}

/** The callback in this browser: the session cookie (and its Max-Age) and where it lands. */
async function finish(b: ScriptedBrowser, callbackUrl: string): Promise<{ location: string; session: string | undefined; maxAge?: number }> {
  const res = await b.request(callbackUrl)
  expect(res.status).toBe(303)
  const session = res.headers.getSetCookie().find((c) => c.startsWith('muster_session=') && !c.startsWith('muster_session=;'))
  if (!session) return { location: res.headers.get('location')!, session: undefined }
  return { location: res.headers.get('location')!, session: session.split(';')[0], maxAge: Number(/Max-Age=(\d+)/.exec(session)?.[1]) }
}

describe('the redirect flow (what the dashboard does)', () => {
  test('the first sign-in creates an sso account with the mapped role and an ordinary session; the audit names subject and issuer', async () => {
    const b = new ScriptedBrowser()
    const { location, session, maxAge } = await finish(b, await startAndSignIn(b, 'alice', 'alice-pass'))
    expect(location).toBe('/')
    expect(session).toBeDefined()
    // The provider's token lives two days; the session 12 hours at most.
    expect(maxAge).toBeGreaterThan(12 * 3600 - 60)
    expect(maxAge).toBeLessThanOrEqual(12 * 3600)
    const who = await (await api('/api/v1/whoami', { headers: { cookie: session! } })).json()
    expect(who).toMatchObject({ account: 'alice@example.com', role: 'superadmin', kind: 'session' })
    expect(await account('alice@example.com')).toMatchObject({ role: 'superadmin', origin: 'sso', hasPassword: false })
    const signIns = await audit('sso.login')
    const mine = signIns.find((e) => e.principal === 'alice@example.com' && e.outcome === 'ok')
    expect(mine?.detail).toBe(`role=superadmin sub=alice iss=${p.op.issuer}`)
    // Never a token: no JWT, no code, no secret in any entry.
    const all = JSON.stringify(await audit(''))
    expect(all).not.toMatch(/eyJ[\w-]{10,}|muster-test-client-secret/)
  })

  test('a group change at the provider changes the role at the next sign-in; a demotion ends the sessions it had', async () => {
    const b1 = new ScriptedBrowser()
    const first = await finish(b1, await startAndSignIn(b1, 'bob', 'bob-pass'))
    expect((await (await api('/api/v1/whoami', { headers: { cookie: first.session! } })).json()).role).toBe('operator')
    p.op.setGroups('bob', ['readers'])
    const b2 = new ScriptedBrowser()
    const second = await finish(b2, await startAndSignIn(b2, 'bob', 'bob-pass'))
    expect((await (await api('/api/v1/whoami', { headers: { cookie: second.session! } })).json()).role).toBe('viewer')
    // The operator session of before is over.
    expect((await api('/api/v1/whoami', { headers: { cookie: first.session! } })).status).toBe(401)
    const change = (await audit('account.set-role')).find((e) => e.target === 'bob@example.com')
    expect(change?.detail).toBe(`from groups: operator → viewer (demoted); sub=bob iss=${p.op.issuer}`)
    p.op.setGroups('bob', ['developers'])
  })

  test('a user none of whose groups is mapped is refused, audited with the reason, and gets no account', async () => {
    const b = new ScriptedBrowser()
    const { location, session } = await finish(b, await startAndSignIn(b, 'carol', 'carol-pass'))
    expect(location).toBe('/?sso=refused')
    expect(session).toBeUndefined()
    expect(await account('carol@example.com')).toBeUndefined()
    // A refusal names whom the provider's claims said (its target), never as its principal: nobody known signed in.
    const refusal = (await audit('sso.login')).find((e) => e.target === 'carol@example.com')
    expect(refusal).toMatchObject({ principal: '(unknown)', outcome: 'denied', detail: `no mapped group (1 group in claim groups); sub=carol iss=${p.op.issuer}` })
  })

  test('a replayed callback (the same code and state) is refused', async () => {
    const b = new ScriptedBrowser()
    const back = await startAndSignIn(b, 'bob', 'bob-pass')
    expect((await finish(b, back)).session).toBeDefined()
    const again = await finish(b, back)
    expect(again).toEqual({ location: '/?sso=refused', session: undefined })
    // muster refused it itself (the flow is taken once), before the provider would have.
    expect((await audit('sso.login')).find((e) => e.outcome === 'denied')?.detail).toBe('state mismatch (unknown, used or expired flow)')
  })

  test('a code injected into another browser (login CSRF) is refused: the flow answers only the browser that started it', async () => {
    const attacker = new ScriptedBrowser()
    const back = await startAndSignIn(attacker, 'bob', 'bob-pass')
    const victim = new ScriptedBrowser()
    expect(await finish(victim, back)).toEqual({ location: '/?sso=refused', session: undefined })
    expect((await audit('sso.login')).some((e) => e.detail === 'state mismatch (flow started by another browser)')).toBe(true)
    // The attacker's own flow was used up by the attempt: nobody signs in with that code.
    expect((await finish(attacker, back)).session).toBeUndefined()
  })

  test('a swapped state (the code of one flow with the state of another, same browser) is refused by PKCE at the provider', async () => {
    const b = new ScriptedBrowser()
    const one = await startAndSignIn(b, 'bob', 'bob-pass')
    const two = await startAndSignIn(b, 'bob', 'bob-pass')
    const swapped = new URL(one)
    swapped.searchParams.set('state', new URL(two).searchParams.get('state')!)
    expect((await finish(b, swapped.href)).session).toBeUndefined()
    expect((await audit('sso.login')).some((e) => e.outcome === 'denied' && /invalid_grant/.test(e.detail ?? ''))).toBe(true)
  })

  test('a provider user whose name a local account holds is refused: SSO never takes over a local account', async () => {
    const made = await api('/api/v1/accounts', { method: 'POST', token: admin, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: 'dave@other.example', role: 'viewer', password: 'dave-local-password' }) })
    expect(made.status).toBe(200)
    const b = new ScriptedBrowser()
    expect((await finish(b, await startAndSignIn(b, 'dave', 'dave-pass'))).session).toBeUndefined()
    expect(await account('dave@other.example')).toMatchObject({ origin: 'local', role: 'viewer' })
    // The attempt is not the local dave's: a provider user whose claims name an account is not that account.
    const attempt = (await audit('sso.login')).find((e) => e.target === 'dave@other.example')
    expect(attempt).toMatchObject({ principal: '(unknown)', detail: `account name dave@other.example is taken by an account that is not this provider subject’s; sub=dave iss=${p.op.issuer}` })
    expect((await audit('sso.login')).filter((e) => e.principal === 'dave@other.example')).toEqual([])
  })

  test('the provider rotates its signing key: the next sign-in works at once (the JWKS is fetched again for the unknown kid)', async () => {
    await p.op.rotateKeys()
    const b = new ScriptedBrowser()
    expect((await finish(b, await startAndSignIn(b, 'alice', 'alice-pass'))).session).toBeDefined()
  })

  test('an sso account has no password: admin passwd refuses it, and password login never opens it', async () => {
    const r = await runMuster(['admin', 'passwd', 'alice@example.com', '--data-dir', p.dataDir], { stdin: 'a-new-password-123\n' })
    expect(r.code).not.toBe(0)
    expect(r.stderr).toContain('signs in with the identity provider (kind sso) and has no password')
    expect(r.stderr).not.toMatch(/\bat .*\.ts:\d+/)
    const login = await api('/login', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ identifier: 'alice@example.com', password: 'a-new-password-123' }) })
    expect(login.status).toBe(401)
  })
})

describe('muster login --sso', () => {
  test('through the loopback redirect: the browser opens, signs in, comes back to the CLI; the saved login works and ends with the session', async () => {
    const urls = join(scratch, 'opened-urls')
    const opener = join(scratch, 'browser.sh')
    writeFileSync(opener, `#!/bin/sh\nprintf '%s\\n' "$1" >> '${urls}'\n`)
    chmodSync(opener, 0o755)
    const cli = startMuster(['login', '--sso', '--platform-url', p.url, '--json'], { env: { BROWSER: opener } })
    const d = await cli
    const opened = await waitFor(() => (existsSync(urls) ? readFileSync(urls, 'utf8').trim() || null : null), { timeoutMs: 30_000, what: 'the CLI to open the browser' })
    // The browser: signs in at the provider, then follows the Platform's redirect to the CLI's loopback.
    const b = new ScriptedBrowser()
    const back = await b.signIn(opened, 'alice', 'alice-pass', p.callback)
    const landed = await b.follow(back)
    expect(landed.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/callback\?grant=/)
    expect(await landed.res.text()).toContain('Signed in')
    expect(await d.proc.exited).toBe(0)
    const out = JSON.parse(d.log().trim().split('\n').at(-1)!)
    expect(out).toMatchObject({ url: p.url, account: 'alice@example.com', role: 'superadmin' })
    // An SSO login's token ends no later than its session (the ID token's lifetime, 12 h at most), not after 30 days.
    expect(Date.parse(out.expiresAt)).toBeLessThanOrEqual(Date.now() + 12 * 3600_000)
    const list = await runMuster(['accounts', 'list', '--json'])
    expect(list.code).toBe(0)
    expect(JSON.parse(list.stdout).accounts.some((a: { name: string }) => a.name === 'alice@example.com')).toBe(true)
  })

  test('a refused sign-in reaches the waiting CLI at once: it says so and saves nothing', async () => {
    const urls = join(scratch, 'opened-refused')
    const opener = join(scratch, 'browser-refused.sh')
    writeFileSync(opener, `#!/bin/sh\nprintf '%s\\n' "$1" >> '${urls}'\n`)
    chmodSync(opener, 0o755)
    const d = await startMuster(['login', '--sso', '--platform-url', p.url], { env: { BROWSER: opener, XDG_CONFIG_HOME: join(scratch, 'refused-config') } })
    const opened = await waitFor(() => (existsSync(urls) ? readFileSync(urls, 'utf8').trim() || null : null), { timeoutMs: 30_000, what: 'the CLI to open the browser' })
    const b = new ScriptedBrowser()
    const landed = await b.follow(await b.signIn(opened, 'carol', 'carol-pass', p.callback))
    expect(landed.url).toMatch(/\/callback\?error=access_denied/)
    expect(await d.proc.exited).toBe(1)
    expect(d.log()).toContain('Sign-in refused by muster')
    expect(existsSync(join(scratch, 'refused-config'))).toBe(false)
  })

  test('a grant injected into the CLI loopback without the CLI verifier buys nothing', async () => {
    // An attacker who signed in for themselves has a grant; redeeming it needs the PKCE verifier of the CLI that started the flow.
    const res = await api('/auth/oidc/cli', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ redirectUri: 'http://127.0.0.1:40000/callback', state: 'A'.repeat(43), codeChallenge: 'B'.repeat(43) }) })
    expect(res.status).toBe(200)
    const b = new ScriptedBrowser()
    const back = await b.signIn((await res.json()).url, 'bob', 'bob-pass', p.callback)
    const toLoopback = await b.request(back)
    const grant = new URL(toLoopback.headers.get('location')!).searchParams.get('grant')!
    const redeem = await api('/auth/oidc/cli/redeem', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ grant, codeVerifier: 'C'.repeat(43) }) })
    expect(redeem.status).toBe(401)
    expect(redeem.headers.get('set-cookie')).toBeNull()
    expect((await audit('sso.login')).some((e) => e.detail === 'cli grant: PKCE verifier mismatch')).toBe(true)
  })

  test('a CLI grant works once, with the verifier of its challenge', async () => {
    const verifier = 'v'.repeat(43)
    const challenge = new Bun.CryptoHasher('sha256').update(verifier).digest('base64url')
    const res = await api('/auth/oidc/cli', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ redirectUri: 'http://127.0.0.1:40001/callback', state: 'S'.repeat(43), codeChallenge: challenge }) })
    const b = new ScriptedBrowser()
    const toLoopback = await b.request(await b.signIn((await res.json()).url, 'bob', 'bob-pass', p.callback))
    const back = new URL(toLoopback.headers.get('location')!)
    expect(back.searchParams.get('state')).toBe('S'.repeat(43))
    const redeem = () => api('/auth/oidc/cli/redeem', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ grant: back.searchParams.get('grant'), codeVerifier: verifier }) })
    const first = await redeem()
    expect(first.status).toBe(200)
    expect(await first.json()).toMatchObject({ ok: true, account: 'bob@example.com', role: 'operator' })
    expect((await redeem()).status).toBe(401)
    // A redirect off loopback is never accepted.
    const off = await api('/auth/oidc/cli', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ redirectUri: 'http://attacker.example/cb', state: 'A'.repeat(43), codeChallenge: 'B'.repeat(43) }) })
    expect(off.status).toBe(400)
  })

  test('through the device flow: a URL and a code, confirmed at the provider; the CLI saves the login', async () => {
    const d = await startMuster(['login', '--sso', '--device', '--platform-url', p.url, '--json'], { env: { BROWSER: undefined, DISPLAY: undefined, WAYLAND_DISPLAY: undefined } })
    const m = await d.waitForLog(/\(or open (http\S+)\)/, 30_000)
    expect(d.log()).toMatch(/enter the code [A-Z]{4}-[A-Z]{4}/)
    expect(await new ScriptedBrowser().confirmDevice(m[1]!, 'bob', 'bob-pass')).toContain('device-done')
    expect(await d.proc.exited).toBe(0)
    expect(JSON.parse(d.log().trim().split('\n').at(-1)!)).toMatchObject({ account: 'bob@example.com', role: 'operator' })
  })
})
