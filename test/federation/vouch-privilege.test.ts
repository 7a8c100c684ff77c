// docs/security.md: a viewer-role API token of the superadmin
// account used to mint a vouch that opened a superadmin session on every
// office, which then minted a permanent token there. Now: vouching needs
// server.federation.vouch, the vouch carries the voucher's role, the office
// grants the lower of it and its own account's role (a new account at most
// that role, never superadmin), and a vouched session mints no tokens and
// lasts at most 12 hours.
import { describe, expect, test } from 'bun:test'
import { insertAccount } from '../../src/store/accounts.ts'
import { MusterError } from '../../src/errors.ts'
import { onEngine, startPlatform, type TestPlatform } from '../helpers/platform.ts'
import { ENGINES } from '../helpers/postgres.ts'
import { tmpDir, waitFor } from '../helpers/tmp.ts'
import { startOffice, vouchedClient } from './_helpers.ts'
import { detach } from '../../src/federation/host.ts'

async function tokenFor(p: TestPlatform, account: string, role: 'superadmin' | 'operator' | 'viewer') {
  return p.clientWith((await p.platform.auth.mintApiToken({ name: `${account}-${role}`, role, account })).token)
}

/** Redeems a vouch at the office; the session cookie. */
async function redeem(office: TestPlatform, vouch: string): Promise<{ cookie: string; body: { account: string; role: string; created: boolean }; maxAge: number }> {
  const res = await fetch(`${office.url}/api/office/vouch`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ vouch }) })
  expect(res.status).toBe(200)
  const set = res.headers.get('set-cookie')!
  return { cookie: set.split(';')[0]!, body: (await res.json()) as { account: string; role: string; created: boolean }, maxAge: Number(/Max-Age=(\d+)/.exec(set)?.[1]) }
}

const asSession = (office: TestPlatform, cookie: string, path: string, init: RequestInit = {}) =>
  fetch(`${office.url}${path}`, { ...init, headers: { cookie, origin: office.url, 'content-type': 'application/json', ...init.headers } })

describe.each(ENGINES)('on %s', (engine) => {
  onEngine(engine)

  test('a viewer token of the superadmin account cannot vouch; an operator vouch gets at most operator; a vouched session mints no token', async () => {
    using d = tmpDir()
    await using c = await startPlatform()
    const { token } = await c.client.federation.mint({ officeId: 'office-a' })
    await using o = await startOffice(c.url, token, { dataDir: d.path })
    await waitFor(async () => (await c.client.federation.offices()).offices[0]?.advertiseUrl, { what: 'office registered' })

    // 1. the attack as it was: a viewer-role token of the superadmin account
    const viewer = await tokenFor(c, 'superadmin', 'viewer')
    const refused = await viewer.federation.vouch('office-a').catch((e: MusterError) => e)
    expect(refused).toBeInstanceOf(MusterError)
    expect((refused as MusterError).code).toBe('forbidden')
    expect((refused as MusterError).message).toContain('server.federation.vouch')

    // 2. an operator-role token of the same account: the vouch says operator, and so does the session
    const operator = await tokenFor(c, 'superadmin', 'operator')
    const v = await operator.federation.vouch('office-a')
    expect(v.vouch).toMatch(/^mfv2:office-a:superadmin:operator:/)
    const s = await redeem(o, v.vouch)
    expect(s.body).toEqual({ ok: true, account: 'superadmin', created: false, role: 'operator' } as never)
    expect(await (await asSession(o, s.cookie, '/api/v1/whoami')).json()).toMatchObject({ account: 'superadmin', role: 'operator', kind: 'session' })
    expect((await asSession(o, s.cookie, '/api/v1/federation/join-tokens', { method: 'POST', body: '{"officeId":"x"}' })).status).toBe(403) // superadmin-only

    // 3. a vouched session cannot mint a token, even a superadmin one, even of a lesser role
    const superVouch = await (await tokenFor(c, 'superadmin', 'superadmin')).federation.vouch('office-a')
    const su = await redeem(o, superVouch.vouch)
    expect(su.body.role).toBe('superadmin')
    for (const body of ['{}', '{"role":"viewer"}']) {
      const mint = await asSession(o, su.cookie, '/api/v1/api-tokens', { method: 'POST', body })
      expect(mint.status).toBe(403)
      expect(await mint.text()).not.toContain('mat_')
    }
    expect((await o.platform.store.all<{ name: string }>('SELECT name FROM api_tokens')).map((t) => t.name)).toEqual(['test'])
  })

  test('a vouched session ends when its office detaches (it mints no token there either)', async () => {
    using d = tmpDir()
    await using c = await startPlatform()
    const { token } = await c.client.federation.mint({ officeId: 'office-a' })
    const o = await startOffice(c.url, token, { dataDir: d.path })
    await waitFor(async () => (await c.client.federation.offices()).offices[0]?.advertiseUrl, { what: 'office registered' })
    const su = await redeem(o, (await (await tokenFor(c, 'superadmin', 'superadmin')).federation.vouch('office-a')).vouch)
    await o.close()
    await detach(d.path)
    await using left = await startPlatform({ dataDir: d.path, keepDir: true })
    expect((await asSession(left, su.cookie, '/api/v1/whoami')).status).toBe(401)
    const mint = await asSession(left, su.cookie, '/api/v1/api-tokens', { method: 'POST', body: '{}' })
    expect(mint.status).toBe(401)
    expect(await mint.text()).not.toContain('mat_')
    expect(await left.platform.store.get('SELECT 1 FROM sessions')).toBeNull()
  })

  test("the office grants the lower of the vouch's role and its own account's; a new account never superadmin; 12 hours at most", async () => {
    using d = tmpDir()
    await using c = await startPlatform()
    const { token } = await c.client.federation.mint({ officeId: 'office-a' })
    await using o = await startOffice(c.url, token, { dataDir: d.path })
    await waitFor(async () => (await c.client.federation.offices()).offices[0]?.advertiseUrl, { what: 'office registered' })
    for (const [name, role] of [['bob', 'superadmin'], ['carol', 'superadmin'], ['dave', 'operator']] as const) await insertAccount(c.platform.store, { name, role, passwordHash: null, now: Date.now() })
    await insertAccount(o.platform.store, { name: 'bob', role: 'viewer', passwordHash: null, now: Date.now() })

    // bob: superadmin at the controller, viewer here → viewer
    const bob = await redeem(o, (await (await tokenFor(c, 'bob', 'superadmin')).federation.vouch('office-a')).vouch)
    expect(bob.body).toMatchObject({ account: 'bob', created: false, role: 'viewer' })
    // carol: superadmin at the controller, unknown here → created as operator, never superadmin
    const carol = await redeem(o, (await (await tokenFor(c, 'carol', 'superadmin')).federation.vouch('office-a')).vouch)
    expect(carol.body).toMatchObject({ account: 'carol', created: true, role: 'operator' })
    // dave: operator at the controller, unknown here → operator
    const dave = await redeem(o, (await (await tokenFor(c, 'dave', 'operator')).federation.vouch('office-a')).vouch)
    expect(dave.body).toMatchObject({ account: 'dave', created: true, role: 'operator' })
    const writes = (await (await vouchedClient(c, o)).federation.identityWrites()).writes.map((w) => [w.owner, w.action, w.role])
    expect(writes).toContainEqual(['carol', 'created', 'operator'])
    expect(writes).toContainEqual(['dave', 'created', 'operator'])
    expect(await o.platform.store.get('SELECT role FROM accounts WHERE name = ?1', 'carol')).toEqual({ role: 'operator' })

    // at most 12 hours: the cookie says so, and the office holds to it
    expect(carol.maxAge).toBeLessThanOrEqual(12 * 3600)
    expect((await asSession(o, carol.cookie, '/api/v1/whoami')).status).toBe(200)
    o.advance(12 * 3600_000 + 1000)
    expect((await asSession(o, carol.cookie, '/api/v1/whoami')).status).toBe(401)
  })
})
