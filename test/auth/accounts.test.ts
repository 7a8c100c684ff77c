// In process: the rules behind `muster accounts` — the last
// live superadmin stays one, accounts expire, a demotion ends what the
// account's logins made while a promotion ends nothing, and no token of an
// account acts above the account's current role.
import { describe, expect, test } from 'bun:test'
import { ENGINES } from '../helpers/postgres.ts'
import { onEngine, startPlatform, type TestPlatform } from '../helpers/platform.ts'
import { MusterError } from '../../src/errors.ts'
import { createClient } from '../../src/client/index.ts'

const json = { 'content-type': 'application/json' }
const code = async (p: Promise<unknown>) => ((await p.catch((e: MusterError) => e)) as MusterError).code

async function session(p: TestPlatform, identifier: string, password: string): Promise<string> {
  const r = await fetch(`${p.url}/login`, { method: 'POST', headers: json, body: JSON.stringify({ identifier, password }) })
  if (r.status !== 200) throw new Error(`login ${identifier}: ${r.status}`)
  return r.headers.get('set-cookie')!.split(';')[0]!
}
const whoami = (p: TestPlatform, h: Record<string, string>) => fetch(`${p.url}/api/v1/whoami`, { headers: h })

describe.each(ENGINES)('on %s', (engine) => {
  onEngine(engine)

  describe('accounts for people', () => {
  test('the last live superadmin cannot be demoted, disabled or removed; a disabled or expired one does not count', async () => {
    await using p = await startPlatform()
    const a = p.client.accounts
    expect(await code(a.setRole('superadmin', 'operator'))).toBe('conflict')
    expect(await code(a.disable('superadmin'))).toBe('conflict')
    expect(await code(a.remove('superadmin'))).toBe('conflict')
    await a.add({ name: 'sue', role: 'superadmin', password: 'sue-password-1234' })
    await a.disable('sue')
    expect(await code(a.setRole('superadmin', 'operator'))).toBe('conflict') // a disabled superadmin is nobody's way in
    await a.enable('sue')
    await a.add({ name: 'tim', role: 'superadmin', password: 'tim-password-1234', expiresAt: new Date(Date.now() + 60_000).toISOString() })
    expect((await a.setRole('superadmin', 'operator')).role).toBe('operator')
    p.advance(120_000) // tim has expired: sue is the last live superadmin
    expect(await code(a.remove('sue'))).toBe('conflict')
    expect(await code(a.setRole('sue', 'viewer'))).toBe('conflict')
    expect((await a.setRole('superadmin', 'superadmin')).role).toBe('superadmin') // raising is never refused
    expect(await a.remove('sue')).toEqual({ name: 'sue', removed: true })
    expect(await code(a.setRole('nobody', 'viewer'))).toBe('not-found')
  })

  test('an account that expired logs in no more, and its sessions and tokens stop', async () => {
    await using p = await startPlatform()
    await p.client.accounts.add({ name: 'temp', role: 'operator', password: 'temp-password-123', expiresAt: new Date(Date.now() + 3_600_000).toISOString() })
    const cookie = await session(p, 'temp', 'temp-password-123')
    const { token } = await p.platform.auth.mintApiToken({ name: 'temp-cli', role: 'operator', account: 'temp' })
    expect((await whoami(p, { cookie })).status).toBe(200)
    p.advance(3_600_000 + 1000)
    expect((await whoami(p, { cookie })).status).toBe(401)
    expect((await whoami(p, { authorization: `Bearer ${token}` })).status).toBe(401)
    await expect(session(p, 'temp', 'temp-password-123')).rejects.toThrow('401')
    expect(await code(p.client.accounts.add({ name: 'late', role: 'viewer', password: 'late-password-123', expiresAt: '2001-01-01T00:00:00Z' }))).toBe('invalid-request')
  })

  test('a demotion ends sessions and login tokens (with their children); a promotion ends nothing; no token acts above its account', async () => {
    await using p = await startPlatform()
    await p.client.accounts.add({ name: 'olga', role: 'operator', password: 'olga-password-123' })
    const cookie = await session(p, 'olga', 'olga-password-123')
    // a login token (what `muster login` saves), and a child it minted
    const cookieClient = createClient({ url: p.url, headers: { cookie } })
    const loginToken = await cookieClient.auth.mintApiToken({ name: 'olga-cli' })
    const child = await p.clientWith(loginToken.token).auth.mintApiToken({ name: 'olga-child' })
    const host = await p.platform.auth.mintApiToken({ name: 'olga-host', role: 'operator', account: 'olga' })
    const status = async (t: string) => (await whoami(p, { authorization: `Bearer ${t}` })).status
    // promoted: nothing ends
    expect((await p.client.accounts.setRole('olga', 'superadmin')).ended).toBeUndefined()
    expect([(await whoami(p, { cookie })).status, await status(loginToken.token), await status(child.token)]).toEqual([200, 200, 200])
    // demoted: the session, the login token and its child end; the host token is held to the new role
    expect((await p.client.accounts.setRole('olga', 'viewer')).ended).toEqual({ sessions: 1, tokens: 2 })
    expect([(await whoami(p, { cookie })).status, await status(loginToken.token), await status(child.token)]).toEqual([401, 401, 401])
    expect(await (await whoami(p, { authorization: `Bearer ${host.token}` })).json()).toMatchObject({ role: 'viewer' })
    expect(await code(p.clientWith(host.token).projects.deploy({ name: 'web', command: ['sleep', '1'], replicas: 0 }))).toBe('forbidden')
    // disabled: every token of the account stops; enabled again, the host token works (as a viewer), a session ended stays ended
    const again = await session(p, 'olga', 'olga-password-123')
    await p.client.accounts.disable('olga')
    expect(await status(host.token)).toBe(401)
    await p.client.accounts.enable('olga')
    expect(await status(host.token)).toBe(200)
    expect((await whoami(p, { cookie: again })).status).toBe(401)
    // removed: every token of the account is revoked, for good
    await p.client.accounts.remove('olga')
    await p.client.accounts.add({ name: 'olga', role: 'superadmin', password: 'olga-password-456' })
    expect(await status(host.token)).toBe(401)
  })

  test('names are checked; a taken name is a conflict; only server.accounts.manage manages', async () => {
    await using p = await startPlatform()
    for (const name of ['', 'Olga', '-x', 'a b', 'x'.repeat(65), '../etc', 'olga/1']) {
      expect([name, await code(p.client.accounts.add({ name, role: 'viewer', password: 'long-enough-pass' }))]).toEqual([name, 'invalid-request'])
    }
    expect(await code(p.client.accounts.add({ name: 'olga', role: 'king' as never, password: 'long-enough-pass' }))).toBe('invalid-request')
    await p.client.accounts.add({ name: 'olga.k@team-1', role: 'viewer', password: 'long-enough-pass' })
    expect(await code(p.client.accounts.add({ name: 'olga.k@team-1', role: 'viewer', password: 'long-enough-pass' }))).toBe('conflict')
    for (const role of ['operator', 'viewer'] as const) {
      const { token } = await p.platform.auth.mintApiToken({ name: role, role })
      const c = p.clientWith(token)
      for (const call of [() => c.accounts.list(), () => c.accounts.add({ name: 'x', role: 'superadmin', password: 'long-enough-pass' }), () => c.accounts.setRole('olga.k@team-1', 'superadmin'), () => c.accounts.disable('superadmin'), () => c.accounts.remove('olga.k@team-1')]) {
        expect(await code(call())).toBe('forbidden')
      }
    }
    expect((await p.client.accounts.list()).accounts.map((a) => [a.name, a.role])).toEqual([['olga.k@team-1', 'viewer'], ['superadmin', 'superadmin']])
  })

  test('revoking a token revokes every token minted from it, and only those (item 7)', async () => {
    await using p = await startPlatform()
    const status = async (t: string) => (await whoami(p, { authorization: `Bearer ${t}` })).status
    const leaked = await p.platform.auth.mintApiToken({ name: 'leaked', role: 'superadmin', expiresAt: Date.now() + 86_400_000 })
    const child = await p.clientWith(leaked.token).auth.mintApiToken({ name: 'child', ttlDays: 3650 })
    expect(Date.parse(child.expiresAt!)).toBeLessThanOrEqual(leaked.expiresAt!)
    const grandchild = await p.clientWith(child.token).auth.mintApiToken({ name: 'grandchild', role: 'viewer' })
    const sibling = await p.client.auth.mintApiToken({ name: 'sibling' })
    expect(await p.client.auth.revokeApiToken(child.id)).toEqual({ id: child.id, revoked: true, descendants: 1 })
    expect([await status(leaked.token), await status(child.token), await status(grandchild.token), await status(sibling.token)]).toEqual([200, 401, 401, 200])
    const second = await p.clientWith(leaked.token).auth.mintApiToken({ name: 'second' })
    expect(await p.client.auth.revokeApiToken(leaked.id)).toEqual({ id: leaked.id, revoked: true, descendants: 1 })
    expect([await status(leaked.token), await status(second.token), await status(sibling.token), await status(p.token)]).toEqual([401, 401, 200, 200])
  })
})
})
