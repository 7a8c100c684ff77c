// Login CSRF through the CLI's end of a sign-in with the identity provider
// (docs/security.md, "Vouch links and login CSRF"), through dist/muster and a
// real OpenID provider: a user who may sign in (bob, an operator) finishes a
// sign-in of their own — a CLI grant with its verifier, or a device handle the
// provider confirmed — and puts it in a form on another site. A victim's browser
// posting that form got a session cookie for bob's account: everything the
// victim then did in the dashboard (a project and its env, a token) went to the
// attacker. Those routes now refuse a form from another site, as /login does;
// the CLI (JSON) still redeems the same grant and handle.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { runMuster } from '../helpers/binary.ts'
import { ScriptedBrowser } from '../helpers/oidc-browser.ts'
import { startOidcPlatform, type OidcPlatform } from '../helpers/oidc-fixture.ts'

let p: OidcPlatform
beforeAll(async () => {
  p = await startOidcPlatform()
})
afterAll(async () => {
  await p?.close()
})

const api = (path: string, init: RequestInit = {}) => fetch(`${p.url}${path}`, { ...init, redirect: 'manual' })
const json = (body: unknown): RequestInit => ({ method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
/** What a page on another site makes a browser send: a urlencoded form, from a foreign origin. */
const crossSiteForm = (fields: Record<string, string>, headers: Record<string, string>): RequestInit => ({
  method: 'POST',
  headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
  body: new URLSearchParams(fields).toString(),
})
const FOREIGN: Record<string, string>[] = [
  { origin: 'https://evil.example', 'sec-fetch-site': 'cross-site' },
  // A sibling site, and a browser that hides the Origin but says where the form came from.
  { origin: 'http://127.0.0.2:8080', 'sec-fetch-site': 'same-site' },
  { 'sec-fetch-site': 'cross-site' },
]

const sessionCookie = (res: Response) => res.headers.getSetCookie().find((c) => /^muster_session=[^;]/.test(c))

async function sessions(account: string): Promise<number> {
  const minted = JSON.parse((await runMuster(['admin', 'api-token', '--data-dir', p.dataDir, '--name', 'csrf-check', '--json'])).stdout) as { token: string }
  const list = (await (await api('/api/v1/accounts', { headers: { authorization: `Bearer ${minted.token}` } })).json()) as { accounts: { name: string; sessions: number }[] }
  return list.accounts.find((a) => a.name === account)?.sessions ?? 0
}

describe('the CLI end of an SSO sign-in refuses a form from another site', () => {
  test('an attacker’s own CLI grant (with its verifier) in a cross-site form signs no browser in; the CLI redeems it', async () => {
    const verifier = 'a'.repeat(43)
    const challenge = new Bun.CryptoHasher('sha256').update(verifier).digest('base64url')
    const started = await api('/auth/oidc/cli', json({ redirectUri: 'http://127.0.0.1:40011/callback', state: 'S'.repeat(43), codeChallenge: challenge }))
    expect(started.status).toBe(200)
    const b = new ScriptedBrowser()
    const toLoopback = await b.request(await b.signIn(((await started.json()) as { url: string }).url, 'bob', 'bob-pass', p.callback))
    const grant = new URL(toLoopback.headers.get('location')!).searchParams.get('grant')!
    expect(grant).toBeTruthy()
    const before = await sessions('bob@example.com')

    for (const headers of FOREIGN) {
      const res = await api('/auth/oidc/cli/redeem', crossSiteForm({ grant, codeVerifier: verifier }, headers))
      expect([res.status, sessionCookie(res)]).toEqual([403, undefined])
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe('forbidden')
    }
    expect(await sessions('bob@example.com')).toBe(before)

    // The refusal spent nothing: the CLI, which speaks JSON, still redeems it once.
    const cli = await api('/auth/oidc/cli/redeem', json({ grant, codeVerifier: verifier }))
    expect(cli.status).toBe(200)
    expect(sessionCookie(cli)).toBeDefined()
  })

  test('an attacker’s confirmed device handle in a cross-site form signs no browser in; the CLI’s poll gets the session', async () => {
    const device = await api('/auth/oidc/device', { method: 'POST' })
    expect(device.status).toBe(200)
    const d = (await device.json()) as { handle: string; verificationUriComplete: string }
    expect(await new ScriptedBrowser().confirmDevice(d.verificationUriComplete, 'bob', 'bob-pass')).toContain('device-done')
    const before = await sessions('bob@example.com')

    for (const headers of FOREIGN) {
      const res = await api('/auth/oidc/device/poll', crossSiteForm({ handle: d.handle }, headers))
      expect([res.status, sessionCookie(res)]).toEqual([403, undefined])
    }
    expect(await sessions('bob@example.com')).toBe(before)

    const cli = await api('/auth/oidc/device/poll', json({ handle: d.handle }))
    expect(cli.status).toBe(200)
    expect(((await cli.json()) as { account: string }).account).toBe('bob@example.com')
    expect(sessionCookie(cli)).toBeDefined()
  })
})
