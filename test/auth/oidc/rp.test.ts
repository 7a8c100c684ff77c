// The relying party module against a real OpenID provider (oidc-provider):
// the code flow with PKCE, state and nonce, the device flow, and a key
// rotation picked up at once.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { OidcClient, SignInRefused } from '../../../src/auth/oidc/rp.ts'
import { parseRoleMap } from '../../../src/auth/oidc/config.ts'
import { startOidcProvider, type OidcProviderHandle } from '../../helpers/oidc-provider.ts'
import { ScriptedBrowser } from '../../helpers/oidc-browser.ts'

const REDIRECT = 'http://127.0.0.1:9/auth/oidc/callback'
let op: OidcProviderHandle
let rp: OidcClient

beforeAll(async () => {
  op = await startOidcProvider({
    users: { alice: { password: 'alice-pass', email: 'alice@example.com', groups: ['muster-admins'] } },
    clients: [{ clientId: 'muster', clientSecret: 'muster-secret-0123456789', redirectUris: [REDIRECT] }],
  })
  rp = await OidcClient.discover({ issuer: op.issuer, clientId: 'muster', clientSecret: 'muster-secret-0123456789', groupsClaim: 'groups', roleMap: parseRoleMap('muster-admins=superadmin'), allowedDomains: [], only: false, displayName: 'Test' })
})
afterAll(() => op.close())

const flow = () => ({ state: crypto.randomUUID(), nonce: crypto.randomUUID(), verifier: `${crypto.randomUUID()}${crypto.randomUUID()}` })

test('the code flow gives the verified identity with its groups', async () => {
  const f = flow()
  const url = await rp.authorizationUrl(REDIRECT, f)
  expect(new URL(url).searchParams.get('code_challenge_method')).toBe('S256')
  const back = await new ScriptedBrowser().signIn(url, 'alice', 'alice-pass', REDIRECT)
  const id = await rp.exchange(new URL(back), f)
  expect(id.subject).toBe('alice')
  expect(id.issuer).toBe(op.issuer)
  expect(id.claims.groups).toEqual(['muster-admins'])
  expect(id.expiresAt).toBeGreaterThan(Date.now() + 3000_000)
})

test('a wrong state, a wrong PKCE verifier and a replayed code are refused', async () => {
  const f = flow()
  const back = await new ScriptedBrowser().signIn(await rp.authorizationUrl(REDIRECT, f), 'alice', 'alice-pass', REDIRECT)
  const swapped = rp.exchange(new URL(back), { ...f, state: 'another' })
  expect(swapped).rejects.toBeInstanceOf(SignInRefused)
  expect((await swapped.catch((e) => e)).reason).toBe('state mismatch')
  const wrongPkce = await rp.exchange(new URL(back), { ...f, verifier: `${f.verifier}x` }).catch((e) => e)
  expect(wrongPkce.reason).toMatch(/invalid_grant/)
  expect((await rp.exchange(new URL(back), f)).subject).toBe('alice')
  const again = await rp.exchange(new URL(back), f).catch((e) => e)
  expect(again.reason).toMatch(/invalid_grant/)
})

test('after the provider rotates its key, the next sign-in fetches the JWKS again at once', async () => {
  const f = flow()
  await rp.exchange(new URL(await new ScriptedBrowser().signIn(await rp.authorizationUrl(REDIRECT, f), 'alice', 'alice-pass', REDIRECT)), f)
  await op.rotateKeys()
  const g = flow()
  const id = await rp.exchange(new URL(await new ScriptedBrowser().signIn(await rp.authorizationUrl(REDIRECT, g), 'alice', 'alice-pass', REDIRECT)), g)
  expect(id.subject).toBe('alice')
})

test('the device flow: pending until the user confirms, then the identity', async () => {
  expect(rp.deviceFlow).toBe(true)
  const d = await rp.deviceStart()
  expect(await rp.devicePoll(d.deviceCode)).toBe('pending')
  expect(await new ScriptedBrowser().confirmDevice(d.verificationUriComplete!, 'alice', 'alice-pass')).toContain('device-done')
  let r = await rp.devicePoll(d.deviceCode)
  for (let i = 0; i < 10 && typeof r === 'string'; i++) {
    await Bun.sleep(d.interval * 1000)
    r = await rp.devicePoll(d.deviceCode)
  }
  expect(typeof r).toBe('object')
  expect((r as { subject: string }).subject).toBe('alice')
})
