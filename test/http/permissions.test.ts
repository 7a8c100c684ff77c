// Every permission check on the API, attacked through the real route: for
// each route, the credential that must be refused — no
// credential, a node credential, a join token, a viewer, an operator where
// only a superadmin may act — is refused, and the least role that may act is
// let through (its answer may be a 400 or a 404 for the made-up target, never
// 401 or 403). docs/testing.md lists the guarantees; test/mutants/perms.ts
// plants, for each route, the check dropped or widened to a lesser permission.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startPlatform, type TestPlatform } from '../helpers/platform.ts'
import { enrollRaw, newCert } from '../helpers/certs.ts'
import { VERSION } from '../../src/version.ts'
import { insertAccount } from '../../src/store/accounts.ts'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'

type Who = 'anonymous' | 'node' | 'join-token' | 'viewer' | 'operator' | 'superadmin'
type Method = 'GET' | 'POST' | 'PUT' | 'DELETE'

interface Row {
  method: Method
  path: string
  body?: unknown
  /** The least role that may act (its answer is anything but 401/403). */
  allowed: Exclude<Who, 'anonymous' | 'node' | 'join-token'>
}

// A body that passes no validation: the allowed caller gets 400 after the check, and nothing is changed.
const BAD = { nope: true }

export const ROUTES: Row[] = [
  // nodes (docs/nodes.md)
  { method: 'GET', path: '/api/v1/nodes', allowed: 'viewer' },
  { method: 'POST', path: '/api/v1/nodes/enrollments', body: BAD, allowed: 'operator' },
  { method: 'POST', path: '/api/v1/join-tokens', body: { maxUses: 0 }, allowed: 'operator' },
  { method: 'GET', path: '/api/v1/join-tokens', allowed: 'viewer' },
  { method: 'DELETE', path: '/api/v1/join-tokens/aaaaaaaaaaaaaaaa', allowed: 'operator' },
  { method: 'GET', path: '/api/v1/nodes/platform', allowed: 'viewer' },
  { method: 'GET', path: '/api/v1/nodes/audit', allowed: 'operator' },
  { method: 'DELETE', path: '/api/v1/nodes/ghost', allowed: 'operator' },
  { method: 'POST', path: '/api/v1/nodes/ghost/revoke', allowed: 'operator' },
  { method: 'POST', path: '/api/v1/nodes/ghost/rotate', allowed: 'operator' },
  { method: 'POST', path: '/api/v1/nodes/ghost/rebind', body: {}, allowed: 'operator' },
  { method: 'POST', path: '/api/v1/nodes/ghost/drain', body: {}, allowed: 'operator' },
  // projects and logs (docs/workloads.md)
  { method: 'GET', path: '/api/v1/projects', allowed: 'viewer' },
  { method: 'POST', path: '/api/v1/projects', body: BAD, allowed: 'operator' },
  { method: 'GET', path: '/api/v1/projects/ghost', allowed: 'viewer' },
  { method: 'DELETE', path: '/api/v1/projects/ghost', allowed: 'operator' },
  { method: 'GET', path: '/api/v1/shortfall', allowed: 'viewer' },
  { method: 'GET', path: '/api/v1/projects/ghost/logs', allowed: 'operator' },
  // overview and audit
  { method: 'GET', path: '/api/v1/overview', allowed: 'viewer' },
  { method: 'GET', path: '/api/v1/overview/nodes', allowed: 'viewer' },
  { method: 'GET', path: '/api/v1/audit', allowed: 'superadmin' },
  // accounts (server.accounts.manage: superadmin only)
  { method: 'GET', path: '/api/v1/accounts', allowed: 'superadmin' },
  { method: 'POST', path: '/api/v1/accounts', body: BAD, allowed: 'superadmin' },
  { method: 'POST', path: '/api/v1/accounts/ghost/role', body: { role: 'superadmin' }, allowed: 'superadmin' },
  { method: 'POST', path: '/api/v1/accounts/ghost/disable', allowed: 'superadmin' },
  { method: 'POST', path: '/api/v1/accounts/ghost/enable', allowed: 'superadmin' },
  { method: 'DELETE', path: '/api/v1/accounts/ghost', allowed: 'superadmin' },
  // cloud (docs/cloud.md): connect and manage are the operator's
  { method: 'GET', path: '/api/v1/cloud/status', allowed: 'viewer' },
  { method: 'POST', path: '/api/v1/cloud/connections', body: BAD, allowed: 'operator' },
  { method: 'DELETE', path: '/api/v1/cloud/connections/hetzner', allowed: 'operator' },
  { method: 'DELETE', path: '/api/v1/cloud/connections/ghost', allowed: 'operator' },
  { method: 'GET', path: '/api/v1/cloud/providers/ghost/regions', allowed: 'viewer' },
  { method: 'GET', path: '/api/v1/cloud/providers/ghost/sizes', allowed: 'viewer' },
  { method: 'GET', path: '/api/v1/cloud/provisions', allowed: 'viewer' },
  { method: 'POST', path: '/api/v1/cloud/provisions', body: BAD, allowed: 'operator' },
  { method: 'GET', path: '/api/v1/cloud/provisions/prv-aaaaaaaaaaaa', allowed: 'viewer' },
  { method: 'DELETE', path: '/api/v1/cloud/provisions/prv-aaaaaaaaaaaa', allowed: 'operator' },
  { method: 'GET', path: '/api/v1/cloud/audit', allowed: 'viewer' },
  { method: 'GET', path: '/api/v1/cloud/scaling', allowed: 'viewer' },
  { method: 'PUT', path: '/api/v1/cloud/scaling', body: { maxMachines: 0 }, allowed: 'operator' },
  // federation, controller side (server.federation.manage: superadmin only)
  { method: 'POST', path: '/api/v1/federation/join-tokens', body: BAD, allowed: 'superadmin' },
  { method: 'GET', path: '/api/v1/federation/join-tokens', allowed: 'viewer' },
  { method: 'POST', path: '/api/v1/federation/join-tokens/office-x/revoke', allowed: 'superadmin' },
  { method: 'GET', path: '/api/v1/federation/offices', allowed: 'viewer' },
  { method: 'POST', path: '/api/v1/federation/offices/office-x/vouch', allowed: 'operator' },
  { method: 'POST', path: '/api/v1/federation/offices/office-x/projects', body: BAD, allowed: 'superadmin' },
  { method: 'GET', path: '/api/v1/federation/break-glass', allowed: 'viewer' },
  // federation, office side
  { method: 'GET', path: '/api/v1/office/local-authority', allowed: 'viewer' },
  { method: 'GET', path: '/api/v1/office/identity-writes', allowed: 'viewer' },
  { method: 'GET', path: '/api/v1/office/projects', allowed: 'viewer' },
  // releases and rollouts (server.releases.manage: superadmin only; everyone who sees nodes reads them)
  { method: 'GET', path: '/api/v1/releases', allowed: 'viewer' },
  { method: 'POST', path: '/api/v1/releases/uploads', body: BAD, allowed: 'superadmin' },
  { method: 'PUT', path: '/api/v1/releases/uploads/aaaaaaaaaaaaaaaa/0', allowed: 'superadmin' },
  { method: 'POST', path: '/api/v1/releases', body: BAD, allowed: 'superadmin' },
  { method: 'POST', path: '/api/v1/releases/keys', body: BAD, allowed: 'superadmin' },
  { method: 'GET', path: '/api/v1/rollouts', allowed: 'viewer' },
  { method: 'POST', path: '/api/v1/rollouts', body: BAD, allowed: 'superadmin' },
  { method: 'GET', path: '/api/v1/rollouts/latest', allowed: 'viewer' },
  { method: 'POST', path: '/api/v1/rollouts/aaaaaaaaaaaa/pause', allowed: 'superadmin' },
  { method: 'POST', path: '/api/v1/rollouts/aaaaaaaaaaaa/resume', allowed: 'superadmin' },
  { method: 'POST', path: '/api/v1/rollouts/aaaaaaaaaaaa/cancel', allowed: 'superadmin' },
]

const RANK = { viewer: 0, operator: 1, superadmin: 2 } as const

/** The operator roles below `allowed`: each must be refused. */
const lesser = (allowed: Row['allowed']) => (['viewer', 'operator'] as const).filter((r) => RANK[r] < RANK[allowed])

let p: TestPlatform
const bearer: Partial<Record<Who, string>> = {}

beforeAll(async () => {
  p = await startPlatform({ remoteDispatch: true })
  bearer.superadmin = p.token
  bearer.operator = (await p.platform.auth.mintApiToken({ name: 'op', role: 'operator' })).token
  bearer.viewer = (await p.platform.auth.mintApiToken({ name: 'view', role: 'viewer' })).token
  const e = await p.client.nodes.createEnrollment({ nodeId: 'w1' })
  const cert = await newCert('w1')
  const r = await enrollRaw(p.url, { token: e.token, nodeId: 'w1', certPem: cert.certPem, version: VERSION })
  expect(r.status).toBe(200)
  bearer.node = ((await r.json()) as { credential: string }).credential
  bearer['join-token'] = (await p.client.nodes.createJoinToken({ maxUses: 5 })).token
})
afterAll(() => p?.close())

async function call(row: Pick<Row, 'method' | 'path' | 'body'>, who: Who): Promise<{ status: number; text: string }> {
  const token = bearer[who]
  const r = await fetch(`${p.url}${row.path}`, {
    method: row.method,
    headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...(row.body !== undefined ? { 'content-type': 'application/json' } : {}) },
    body: row.body === undefined ? undefined : JSON.stringify(row.body),
  })
  return { status: r.status, text: await r.text() }
}

describe('every operator route refuses the credential that may not act, and lets the least role that may', () => {
  test.each(ROUTES.map((r) => [`${r.method} ${r.path}`, r] as const))('%s', async (_, row) => {
    // No credential: 401; a node credential or a join token: 403, never an operator.
    expect(`anonymous ${(await call(row, 'anonymous')).status}`).toBe('anonymous 401')
    expect(`node ${(await call(row, 'node')).status}`).toBe('node 403')
    expect(`join-token ${(await call(row, 'join-token')).status}`).toBe('join-token 403')
    // Each lesser role: 403 naming the permission it lacks.
    for (const role of lesser(row.allowed)) {
      const r = await call(row, role)
      expect(`${role} ${r.status}`).toBe(`${role} 403`)
      expect(r.text).toMatch(/server\.[a-z]+\.[a-z]+/)
    }
    // The least role allowed gets through the check (the made-up target or the bad body answer 400/404).
    const ok = await call(row, row.allowed)
    expect(`${row.allowed} ${ok.status} ${ok.text}`).not.toMatch(new RegExp(`^${row.allowed} (401|403) `))
    expect(ok.status).toBeLessThan(500)
  })
})

describe('a metrics token reads GET /metrics and nothing else', () => {
  let metrics: string
  beforeAll(async () => {
    metrics = (await p.platform.auth.mintApiToken({ name: 'scraper', role: 'metrics' })).token
  })
  const mine: Row[] = [
    { method: 'GET', path: '/api/v1/whoami', allowed: 'viewer' },
    { method: 'GET', path: '/api/v1/api-tokens', allowed: 'viewer' },
    { method: 'POST', path: '/api/v1/api-tokens', body: { role: 'metrics' }, allowed: 'viewer' },
    { method: 'DELETE', path: '/api/v1/api-tokens/aaaaaaaaaaaaaaaa', allowed: 'viewer' },
  ]
  test.each([...ROUTES, ...mine].map((r) => [`${r.method} ${r.path}`, r] as const))('metrics token: %s is refused', async (_, row) => {
    const token = metrics
    const r = await fetch(`${p.url}${row.path}`, { method: row.method, headers: { authorization: `Bearer ${token}`, ...(row.body !== undefined ? { 'content-type': 'application/json' } : {}) }, body: row.body === undefined ? undefined : JSON.stringify(row.body) })
    expect(`${row.method} ${row.path} ${r.status}`).toBe(`${row.method} ${row.path} 403`)
  })
  test('metrics token: GET /metrics answers', async () => {
    expect((await fetch(`${p.url}/metrics`, { headers: { authorization: `Bearer ${metrics}` } })).status).toBe(200)
  })
})

// ---- API tokens: whose, and of what role ---------------------------------------------------

const api = (token: string, method: Method, path: string, body?: unknown) =>
  fetch(`${p.url}${path}`, { method, headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) }, body: body === undefined ? undefined : JSON.stringify(body) })

/** An account (no password: these tests act with its tokens) and an operator token of it, as `admin api-token --account` mints one. */
async function accountWithToken(name: string, role: 'viewer' | 'operator' | 'superadmin' = 'operator') {
  await insertAccount(p.platform.store, { name, role, passwordHash: null, now: p.platform.now() })
  const t = await p.platform.auth.mintApiToken({ name: `${name}-token`, role, account: name, origin: 'host' })
  return { name, token: t.token, id: t.id }
}

describe('API tokens', () => {
  test('an operator mints a token of its own role only: another role, even a lesser one, needs server.accounts.manage', async () => {
    const r = await api(bearer.operator!, 'POST', '/api/v1/api-tokens', { role: 'viewer' })
    expect(r.status).toBe(403)
    expect(await r.text()).toContain('server.accounts.manage')
    expect((await api(bearer.operator!, 'POST', '/api/v1/api-tokens', { role: 'superadmin' })).status).toBe(403)
    expect((await api(bearer.operator!, 'POST', '/api/v1/api-tokens', { role: 'operator' })).status).toBe(200)
    expect((await api(bearer.superadmin!, 'POST', '/api/v1/api-tokens', { role: 'viewer' })).status).toBe(200)
  })

  test("a token of another account is neither listed nor revoked: the attempt is a 404 and that token keeps working", async () => {
    const alice = await accountWithToken('alice-tok')
    const bob = await accountWithToken('bob-tok')
    const listed = (await (await api(alice.token, 'GET', '/api/v1/api-tokens')).json()) as { tokens: { id: string }[] }
    expect(listed.tokens.map((t) => t.id)).toEqual([alice.id])
    const attack = await api(alice.token, 'DELETE', `/api/v1/api-tokens/${bob.id}`)
    expect(attack.status).toBe(404)
    expect((await api(bob.token, 'GET', '/api/v1/whoami')).status).toBe(200)
    // the superadmin may, and then bob's token is dead at once
    expect((await api(bearer.superadmin!, 'DELETE', `/api/v1/api-tokens/${bob.id}`)).status).toBe(200)
    expect((await api(bob.token, 'GET', '/api/v1/whoami')).status).toBe(401)
  })

  test('a token of no account lists only itself, not the other tokens of no account', async () => {
    const listed = (await (await api(bearer.operator!, 'GET', '/api/v1/api-tokens')).json()) as { tokens: { name: string }[] }
    expect(listed.tokens.map((t) => t.name)).toEqual(['op'])
  })

  test('a token stops working when its account is disabled or has expired, whatever made it', async () => {
    const carol = await accountWithToken('carol-tok')
    const dave = await accountWithToken('dave-tok')
    expect((await api(carol.token, 'GET', '/api/v1/nodes')).status).toBe(200)
    expect((await api(bearer.superadmin!, 'POST', '/api/v1/accounts/carol-tok/disable')).status).toBe(200)
    expect((await api(carol.token, 'GET', '/api/v1/nodes')).status).toBe(401)
    // dave's account expires a minute from now
    await p.platform.store.run('UPDATE accounts SET expires_at = ?2 WHERE name = ?1', dave.name, p.platform.now() + 60_000)
    expect((await api(dave.token, 'GET', '/api/v1/nodes')).status).toBe(200)
    p.advance(61_000)
    expect((await api(dave.token, 'GET', '/api/v1/nodes')).status).toBe(401)
  })
})

// ---- sessions: the cookie and its ends -------------------------------------------------------

describe('sessions', () => {
  async function session(): Promise<string> {
    const password = readFileSync(join(p.dataDir, 'platform/initial-superadmin-password'), 'utf8').trim()
    const r = await fetch(`${p.url}/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ identifier: 'superadmin', password }) })
    expect(r.status).toBe(200)
    return r.headers.get('set-cookie')!.split(';')[0]!
  }

  test('a change made with the session cookie from another site (a form, or no Origin match) is refused; from this Platform as JSON it works', async () => {
    const cookie = await session()
    const form = await fetch(`${p.url}/api/v1/join-tokens`, { method: 'POST', headers: { cookie, origin: 'https://evil.example', 'content-type': 'application/x-www-form-urlencoded' }, body: 'maxUses=1' })
    expect(form.status).toBe(403)
    const foreignJson = await fetch(`${p.url}/api/v1/join-tokens`, { method: 'POST', headers: { cookie, origin: 'https://evil.example', 'content-type': 'application/json' }, body: '{}' })
    expect(foreignJson.status).toBe(403)
    const textPlain = await fetch(`${p.url}/api/v1/join-tokens`, { method: 'POST', headers: { cookie, 'content-type': 'text/plain' }, body: '{}' })
    expect(textPlain.status).toBe(403)
    // a proxy's HTTP Basic credentials, which the browser adds by itself, are no API token: the cookie still acts, so the check holds
    const basic = await fetch(`${p.url}/api/v1/join-tokens`, { method: 'POST', headers: { cookie, authorization: 'Basic dXNlcjpwYXNz', origin: 'https://evil.example', 'content-type': 'application/x-www-form-urlencoded' }, body: '' })
    expect(basic.status).toBe(403)
    expect((await p.client.nodes.listJoinTokens()).tokens.length).toBe(1) // nothing was made
    const own = await fetch(`${p.url}/api/v1/join-tokens`, { method: 'POST', headers: { cookie, origin: new URL(p.url).origin, 'content-type': 'application/json' }, body: '{}' })
    expect(own.status).toBe(200)
  })

  test('logout ends the session at once: the same cookie is 401 afterwards', async () => {
    const cookie = await session()
    expect((await fetch(`${p.url}/api/v1/whoami`, { headers: { cookie } })).status).toBe(200)
    expect((await fetch(`${p.url}/logout`, { method: 'POST', headers: { cookie } })).status).toBe(200)
    expect((await fetch(`${p.url}/api/v1/whoami`, { headers: { cookie } })).status).toBe(401)
  })
})
