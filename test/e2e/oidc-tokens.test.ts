// ID tokens a relying party must refuse, through dist/muster: signed with a key
// the issuer's JWKS does not hold, expired, for another client (aud), with
// another nonce. A certified provider (oidc-provider, used by the other tests)
// never issues these, so this file uses test/fakes/oidc-op.ts, a small provider
// that follows OpenID Connect Core and spoils the token on request.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { runMuster, startServe } from '../helpers/binary.ts'
import { ScriptedBrowser } from '../helpers/oidc-browser.ts'
import { freePort } from '../helpers/oidc-fixture.ts'
import { startFakeOp, type FakeOp, type Mischief } from '../fakes/oidc-op.ts'

const SECRET = 'fake-op-client-secret-0123456789'
let op: FakeOp
let serve: Awaited<ReturnType<typeof startServe>>
let url: string
let admin: string
const dir = mkdtempSync(join(tmpdir(), 'muster-oidc-fake-'))

beforeAll(async () => {
  op = await startFakeOp({ clientId: 'muster', clientSecret: SECRET, sub: 'erin-0001', groups: ['ops'], email: 'erin@example.com' })
  writeFileSync(join(dir, 'secret'), SECRET)
  chmodSync(join(dir, 'secret'), 0o600)
  const port = freePort()
  serve = await startServe(join(dir, 'data'), ['--port', String(port), '--oidc-issuer', op.issuer, '--oidc-client-id', 'muster', '--oidc-client-secret-file', join(dir, 'secret'), '--oidc-role-map', 'ops=operator'])
  url = serve.url
  admin = JSON.parse((await runMuster(['admin', 'api-token', '--data-dir', join(dir, 'data'), '--role', 'superadmin', '--json'])).stdout).token
})
afterAll(async () => {
  await serve?.stop()
  op?.close()
  rmSync(dir, { recursive: true, force: true })
})

/** One sign-in in a fresh browser with the provider spoiling the ID token as told: the session cookie, if any. */
async function signInWith(mischief: Mischief): Promise<string | undefined> {
  op.mischief = mischief
  const b = new ScriptedBrowser()
  const start = await b.request(`${url}/auth/oidc/start`)
  const back = await b.follow(start.headers.get('location')!, `${url}/auth/oidc/callback`)
  const res = await b.request(back.stoppedAt!)
  expect(res.status).toBe(303)
  const cookie = res.headers.getSetCookie().find((c) => /^muster_session=[^;]/.test(c))
  if (!cookie) expect(res.headers.get('location')).toBe('/?sso=refused')
  return cookie?.split(';')[0]
}

async function lastRefusal(): Promise<string | null> {
  const r = await runMuster(['audit', '--action', 'sso.login', '--json'], { env: { MUSTER_URL: url, MUSTER_TOKEN: admin } })
  const entries = JSON.parse(r.stdout).entries as { outcome: string; detail: string | null }[]
  return entries.find((e) => e.outcome === 'denied')?.detail ?? null
}

test('the fake provider’s good token signs in (so each refusal below is the spoiled claim alone)', async () => {
  const cookie = await signInWith('none')
  expect(cookie).toBeDefined()
  const who = await (await fetch(`${url}/api/v1/whoami`, { headers: { cookie: cookie! } })).json()
  expect(who).toMatchObject({ account: 'erin@example.com', role: 'operator' })
})

test.each([
  ['other-key', 'ID token signature not made by the issuer’s keys'],
  ['expired', 'ID token expired or not yet valid (exp)'],
  ['other-audience', 'ID token for another client (aud)'],
  // The nonce of the sign-in before this one: an ID token issued for another flow.
  ['other-nonce', 'nonce mismatch'],
] as const)('an ID token %s is refused, and the audit says why', async (mischief, reason) => {
  if (mischief === 'other-nonce') {
    // Another sign-in reaches the provider first (it is never finished): its nonce is the one the spoiled token carries.
    const other = new ScriptedBrowser()
    expect((await other.follow((await other.request(`${url}/auth/oidc/start`)).headers.get('location')!, `${url}/auth/oidc/callback`)).stoppedAt).toBeDefined()
  }
  const issued = op.issued
  expect(await signInWith(mischief)).toBeUndefined()
  // The provider did issue it: muster read it and said no.
  expect(op.issued).toBe(issued + 1)
  expect(await lastRefusal()).toBe(reason)
})
