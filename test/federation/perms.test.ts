// What a vouch may open on an office (permission checks): an
// account disabled on the office stays shut whatever the controller vouches,
// and a vouched session acts with no more than the vouch's role, mints no
// token, and cannot reach the office's superadmin routes.
import { describe, expect, test } from 'bun:test'
import { startPlatform } from '../helpers/platform.ts'
import { waitFor } from '../helpers/tmp.ts'
import { insertAccount } from '../../src/store/accounts.ts'
import { startOffice } from './_helpers.ts'

describe('vouches on an office', () => {
  test('a vouch for an account disabled on the office is refused and opens no session; enabled again, the next vouch opens one', async () => {
    await using c = await startPlatform()
    const { token } = await c.client.federation.mint({ officeId: 'office-a' })
    await using o = await startOffice(c.url, token)
    await waitFor(async () => (await c.client.federation.offices()).offices.some((x) => x.advertiseUrl), { what: 'the office registered' })
    await insertAccount(c.platform.store, { name: 'alice', role: 'operator', passwordHash: null, now: Date.now() })
    const alice = c.clientWith((await c.platform.auth.mintApiToken({ name: 'alice', role: 'operator', account: 'alice' })).token)
    await insertAccount(o.platform.store, { name: 'alice', role: 'operator', passwordHash: null, now: Date.now() })
    await o.platform.store.run('UPDATE accounts SET disabled = 1 WHERE name = ?1', 'alice')
    const redeem = async () => {
      const { vouch } = await alice.federation.vouch('office-a')
      return fetch(`${o.url}/api/office/vouch`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ vouch }) })
    }
    const refused = await redeem()
    expect(refused.status).toBe(403)
    expect(await refused.text()).toContain('disabled on this office')
    expect(refused.headers.get('set-cookie')).toBeNull()
    expect(await o.platform.store.all('SELECT account FROM sessions')).toEqual([])
    await o.platform.store.run('UPDATE accounts SET disabled = 0 WHERE name = ?1', 'alice')
    const opened = await redeem()
    expect(opened.status).toBe(200)
    const cookie = opened.headers.get('set-cookie')!.split(';')[0]!
    // the vouched operator session: operator routes yes; superadmin routes and token minting no
    const as = (method: string, path: string, body?: unknown) => fetch(`${o.url}${path}`, { method, headers: { cookie, ...(body === undefined ? {} : { 'content-type': 'application/json' }) }, body: body === undefined ? undefined : JSON.stringify(body) })
    expect((await as('GET', '/api/v1/whoami')).status).toBe(200)
    expect((await as('GET', '/api/v1/nodes/audit')).status).toBe(200)
    expect((await as('GET', '/api/v1/accounts')).status).toBe(403)
    expect((await as('POST', '/api/v1/accounts/alice/role', { role: 'superadmin' })).status).toBe(403)
    expect((await as('POST', '/api/v1/api-tokens', {})).status).toBe(403)
  })
})
