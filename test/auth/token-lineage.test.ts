// A token minted with a login's token ends with the account's password
// (docs/accounts-audit.md, API tokens and token lineage), and so does every token minted with it. Two
// things tie it to the password: its lineage (it names its parent; a password
// change revokes the login tokens and everything descended from them) and its
// origin ('login', inherited from its parent). For a token minted now the
// lineage alone suffices, so its origin does not matter to a password change:
// the first test rewrites the origin of the descendants to 'api' (what minting
// them as ordinary API tokens would store) and they still end. The origin is
// what ends a descendant minted before tokens recorded their parent: the
// second test clears the parent and the origin still ends it.
import { describe, expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { createClient } from '../../src/client/index.ts'
import { startPlatform, type TestPlatform } from '../helpers/platform.ts'

async function loginClient(p: TestPlatform) {
  const password = readFileSync(`${p.dataDir}/platform/initial-superadmin-password`, 'utf8').trim()
  const res = await fetch(`${p.url}/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ identifier: 'superadmin', password }) })
  expect(res.status).toBe(200)
  return createClient({ url: p.url, headers: { cookie: res.headers.get('set-cookie')!.split(';')[0]! } })
}
const whoami = (p: TestPlatform, token: string) => fetch(`${p.url}/api/v1/whoami`, { headers: { authorization: `Bearer ${token}` } }).then((r) => r.status)

/** A login token, a token minted with it, and one minted with that: as `muster login` and two `muster tokens create` make them. */
async function family(p: TestPlatform) {
  const login = await (await loginClient(p)).auth.mintApiToken({ name: 'laptop' })
  const child = await p.clientWith(login.token).auth.mintApiToken({ name: 'ci' })
  const grandchild = await p.clientWith(child.token).auth.mintApiToken({ name: 'ci-viewer', role: 'viewer' })
  const rows = await p.platform.store.all<{ id: string; origin: string; parent_id: string | null }>('SELECT id, origin, parent_id FROM api_tokens WHERE id IN (?1, ?2, ?3) ORDER BY created_at, id', login.id, child.id, grandchild.id)
  const byId = new Map(rows.map((r) => [r.id, r]))
  expect([login, child, grandchild].map((t) => byId.get(t.id))).toEqual([
    { id: login.id, origin: 'login', parent_id: null },
    { id: child.id, origin: 'login', parent_id: login.id },
    { id: grandchild.id, origin: 'login', parent_id: child.id },
  ])
  return { login, child, grandchild }
}

describe("tokens minted with a login's token", () => {
  test('end with the password change through their lineage, whatever their origin says', async () => {
    await using p = await startPlatform()
    const { login, child, grandchild } = await family(p)
    const host = await p.platform.auth.mintApiToken({ name: 'host-made', role: 'operator', account: 'superadmin' })
    await p.platform.store.run("UPDATE api_tokens SET origin = 'api' WHERE id IN (?1, ?2)", child.id, grandchild.id)
    expect(await whoami(p, grandchild.token)).toBe(200)
    expect(await p.platform.auth.setPassword('superadmin', 'a-new-password-123')).toEqual({ sessions: 1, tokens: 3 })
    expect({ login: await whoami(p, login.token), child: await whoami(p, child.token), grandchild: await whoami(p, grandchild.token), host: await whoami(p, host.token) }).toEqual({
      login: 401,
      child: 401,
      grandchild: 401,
      host: 200,
    })
  })

  test('end with the password change by their origin when no parent was recorded (minted by an earlier version)', async () => {
    await using p = await startPlatform()
    const { login, child, grandchild } = await family(p)
    await p.platform.store.run('UPDATE api_tokens SET parent_id = NULL WHERE id IN (?1, ?2)', child.id, grandchild.id)
    expect(await p.platform.auth.setPassword('superadmin', 'a-new-password-123')).toEqual({ sessions: 1, tokens: 3 })
    expect([await whoami(p, login.token), await whoami(p, child.token), await whoami(p, grandchild.token)]).toEqual([401, 401, 401])
  })
})
