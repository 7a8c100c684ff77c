// docs/security.md: API tokens list, revoke at once, and expire; tokens made by a
// password login end after 30 days and with the account's password; a token
// minted by a token inherits where it came from and ends no later.
import { describe, expect, test } from 'bun:test'
import { MusterError } from '../../src/errors.ts'
import { createClient } from '../../src/client/index.ts'
import { onEngine, startPlatform, type TestPlatform } from '../helpers/platform.ts'
import { ENGINES } from '../helpers/postgres.ts'
import { chmodSync, copyFileSync, mkdirSync, readFileSync } from 'node:fs'
import { tmpDir } from '../helpers/tmp.ts'

const DAY = 86_400_000

/** A password login's session cookie, and a client that mints with it (as `muster login` does). */
async function loginSession(p: TestPlatform, password = readFileSync(`${p.dataDir}/platform/initial-superadmin-password`, 'utf8').trim()) {
  const res = await fetch(`${p.url}/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ identifier: 'superadmin', password }) })
  expect(res.status).toBe(200)
  const cookie = res.headers.get('set-cookie')!.split(';')[0]!
  return { cookie, client: createClient({ url: p.url, headers: { cookie } }) }
}
const whoami = (p: TestPlatform, token: string) => fetch(`${p.url}/api/v1/whoami`, { headers: { authorization: `Bearer ${token}` } }).then((r) => r.status)

describe.each(ENGINES)('on %s', (engine) => {
  onEngine(engine)

  test('a login token ends after 30 days; asking for longer gets 30; its children end no later and share its fate', async () => {
    await using p = await startPlatform()
    const { client } = await loginSession(p)
    const login = await client.auth.mintApiToken({ name: 'laptop', ttlDays: 365 })
    expect(Date.parse(login.expiresAt!) - p.platform.now()).toBeLessThanOrEqual(30 * DAY)
    expect(Date.parse(login.expiresAt!) - p.platform.now()).toBeGreaterThan(30 * DAY - 60_000)
    const child = await p.clientWith(login.token).auth.mintApiToken({ name: 'child', role: 'viewer' })
    expect(child.expiresAt).toBe(login.expiresAt)
    const shorter = await p.clientWith(login.token).auth.mintApiToken({ name: 'short', ttlDays: 1 })
    expect(Date.parse(shorter.expiresAt!) - p.platform.now()).toBeLessThanOrEqual(DAY)
    // a host-made token has no end unless asked; its children neither
    const open = await p.client.auth.mintApiToken({ name: 'open' })
    expect(open.expiresAt).toBeNull()

    p.advance(DAY + 1000)
    expect(await whoami(p, shorter.token)).toBe(401)
    p.advance(29 * DAY - 2000)
    expect(await whoami(p, login.token)).toBe(200)
    p.advance(2000)
    expect(await whoami(p, login.token)).toBe(401)
    expect(await whoami(p, child.token)).toBe(401)
    expect(await whoami(p, open.token)).toBe(200)
    expect((await p.client.auth.listApiTokens()).tokens.map((t) => t.name).sort()).toEqual(['open', 'test'])
  })

  test('a password change ends the sessions and every token descended from a login; others stay', async () => {
    await using p = await startPlatform()
    const { cookie, client } = await loginSession(p)
    const login = await client.auth.mintApiToken({ name: 'laptop' })
    const child = await p.clientWith(login.token).auth.mintApiToken({ name: 'child' })
    const open = await p.client.auth.mintApiToken({ name: 'open' })
    expect(await p.platform.auth.setPassword('superadmin', 'a-new-password-123')).toEqual({ sessions: 1, tokens: 2 })
    expect(await whoami(p, login.token)).toBe(401)
    expect(await whoami(p, child.token)).toBe(401)
    expect(await whoami(p, open.token)).toBe(200)
    expect((await fetch(`${p.url}/api/v1/whoami`, { headers: { cookie } })).status).toBe(401)
  })

  test('revoke holds at once; only your own (or, with accounts.manage, anyone’s); unknown and foreign ids look alike', async () => {
    await using p = await startPlatform()
    const viewer = await p.platform.auth.mintApiToken({ name: 'v', role: 'viewer', account: 'superadmin' })
    const other = await p.platform.auth.mintApiToken({ name: 'o', role: 'operator' })
    // the viewer's own account holds a superadmin token: neither listed to nor revoked by the viewer
    const boss = await p.platform.auth.mintApiToken({ name: 'boss', role: 'superadmin', account: 'superadmin' })
    const v = p.clientWith(viewer.token)
    expect((await v.auth.listApiTokens()).tokens.map((t) => t.id)).toEqual([viewer.id])
    const refusal = async (id: string) => ((await v.auth.revokeApiToken(id).catch((e: MusterError) => e)) as MusterError).code
    expect(await refusal(other.id)).toBe('not-found')
    expect(await refusal(boss.id)).toBe('not-found')
    expect(await whoami(p, boss.token)).toBe(200)
    expect(await refusal('aaaaaaaaaaaaaaaa')).toBe('not-found')
    expect(await whoami(p, other.token)).toBe(200)
    expect(await p.client.auth.revokeApiToken(other.id)).toEqual({ id: other.id, revoked: true, descendants: 0 })
    expect(await whoami(p, other.token)).toBe(401)
    // a token may revoke itself (that is `muster logout`)
    expect(await v.auth.revokeApiToken(viewer.id)).toEqual({ id: viewer.id, revoked: true, descendants: 0 })
    expect(await whoami(p, viewer.token)).toBe(401)
    const bad = await fetch(`${p.url}/api/v1/api-tokens/NOT-AN-ID`, { method: 'DELETE', headers: { authorization: `Bearer ${p.token}` } })
    expect(bad.status).toBe(400)
  })

  if (engine === 'postgres') {
    test('a token revoked on one Platform is refused at once by another sharing the store', async () => {
      await using a = await startPlatform()
      using dir = tmpDir()
      mkdirSync(`${dir.path}/platform`, { mode: 0o700 })
      copyFileSync(`${a.dataDir}/platform/master.key`, `${dir.path}/platform/master.key`)
      chmodSync(`${dir.path}/platform/master.key`, 0o600)
      await using b = await startPlatform({ database: a.database, dataDir: dir.path })
      const t = await a.platform.auth.mintApiToken({ name: 'shared', role: 'viewer' })
      expect(await whoami(b, t.token)).toBe(200)
      await a.client.auth.revokeApiToken(t.id)
      expect(await whoami(b, t.token)).toBe(401)
    })
  }
})
