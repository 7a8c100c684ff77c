// The audit keeps what people did, under names no one can borrow
// (docs/accounts-audit.md), through dist/muster:
// - a viewer flushed the audit with `POST /logout` (an API token, no cookie:
//   nothing to end, yet an "ok" action each time) and could with any real
//   write of its own; now a write that changes nothing is no action, and each
//   principal has its share of the budget, so the superadmin's account.add,
//   token.mint and project.deploy stay;
// - an account-less token minted a child named `superadmin`, whose acts showed
//   as hers; now such tokens are `token:<id>`, and `--principal superadmin`
//   lists only what her account did;
// - such a token minted a child per write, and each child, a principal of its
//   own, had a share of the budget of its own: seventy children writing once
//   each pushed the superadmin's entries out. Now what a token of no account
//   mints acts as it (`token:<the id the host minted>`; `tokenId` names the
//   child), so its whole lineage holds one share.
import { describe, expect, test } from 'bun:test'
import type { AuditEntry } from '../../src/wire/accounts.ts'
import { runMuster, startServe } from '../helpers/binary.ts'
import { tmpDir } from '../helpers/tmp.ts'

type Entry = AuditEntry

const MAX = 50

async function platform(dir: string) {
  const data = `${dir}/data`
  const serve = await startServe(data, ['--audit-max-entries', String(MAX)])
  const mint = async (...flags: string[]) => JSON.parse((await runMuster(['admin', 'api-token', '--data-dir', data, '--json', ...flags])).stdout) as { token: string; id: string }
  const audit = async (token: string, ...flags: string[]) => {
    const r = await runMuster(['audit', '--all', '--json', ...flags], { env: { MUSTER_URL: serve.url, MUSTER_TOKEN: token } })
    expect(r.code).toBe(0)
    return (JSON.parse(r.stdout) as { entries: Entry[] }).entries
  }
  const api = (token: string | null, method: string, path: string, body?: unknown, cookie?: string) =>
    fetch(`${serve.url}${path}`, {
      method,
      headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...(cookie ? { cookie } : {}), 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    })
  return { serve, data, mint, audit, api }
}

/** What the superadmin's own account did first: an account, a token, a project. */
async function superadminActs(p: Awaited<ReturnType<typeof platform>>) {
  const her = await p.mint('--account', 'superadmin', '--name', 'hers')
  const env = { MUSTER_URL: p.serve.url, MUSTER_TOKEN: her.token }
  expect((await runMuster(['accounts', 'add', 'vic', '--role', 'viewer'], { env, stdin: 'vic-password-1234\n' })).code).toBe(0)
  expect((await p.api(her.token, 'POST', '/api/v1/api-tokens', { name: 'ci' })).status).toBe(200)
  expect((await runMuster(['projects', 'deploy', 'web', '--replicas', '0', '--', 'sleep', '1'], { env })).code).toBe(0)
  return her
}

const hers = (entries: Entry[]) => entries.filter((e) => e.principal === 'superadmin').map((e) => `${e.action} ${e.outcome}`)

describe('the audit budget and its principals through dist/muster', () => {
  test('a viewer logging out in a loop, and minting tokens in a loop, leaves the superadmin’s actions in the audit', { timeout: 120_000 }, async () => {
    using dir = tmpDir()
    await using p = await platform(dir.path).then((x) => Object.assign(x, { [Symbol.asyncDispose]: () => x.serve.stop().then(() => {}) }))
    const her = await superadminActs(p)
    expect(hers(await p.audit(her.token))).toEqual(['project.deploy ok', 'token.mint ok', 'account.add ok'])

    // The viewer: a session (an honest logout ends it: an action) and an API token of her own.
    const login = await p.api(null, 'POST', '/login', { identifier: 'vic', password: 'vic-password-1234' })
    const cookie = login.headers.get('set-cookie')!.split(';')[0]!
    const minted = (await (await p.api(null, 'POST', '/api/v1/api-tokens', { name: 'vic-ci' }, cookie)).json()) as { token: string }
    expect((await p.api(null, 'POST', '/logout', undefined, cookie)).status).toBe(200)

    // 1. Logouts that end nothing (an API token, no cookie), six times the budget: none is an action.
    for (let i = 0; i < 6 * MAX; i += 25) {
      const statuses = await Promise.all(Array.from({ length: 25 }, () => p.api(minted.token, 'POST', '/logout').then((r) => r.status)))
      expect(statuses.every((s) => s === 200)).toBe(true)
    }
    let entries = await p.audit(her.token)
    expect(hers(entries)).toEqual(['project.deploy ok', 'token.mint ok', 'account.add ok'])
    const logouts = entries.filter((e) => e.action === 'logout')
    expect(logouts.filter((e) => e.outcome === 'ok').map((e) => e.principalKind)).toEqual(['session'])
    expect(logouts.filter((e) => e.outcome === 'unchanged').length).toBeGreaterThan(0)
    expect(logouts.filter((e) => e.outcome === 'unchanged').every((e) => e.principal === 'vic')).toBe(true)

    // 2. Writes that do change something (a token each), three times the budget: the viewer pushes out her own.
    for (let i = 0; i < 3 * MAX; i += 25) {
      const statuses = await Promise.all(Array.from({ length: 25 }, (_, j) => p.api(minted.token, 'POST', '/api/v1/api-tokens', { name: `junk-${i + j}` }).then((r) => r.status)))
      expect(statuses.every((s) => s === 200)).toBe(true)
    }
    entries = await p.audit(her.token)
    expect(hers(entries)).toEqual(['project.deploy ok', 'token.mint ok', 'account.add ok'])
    // The budget stayed full of the viewer's newest, and she paid for each with her own oldest.
    const vics = entries.filter((e) => e.principal === 'vic' && e.action === 'token.mint')
    expect(vics.length).toBeGreaterThan(MAX - 10)
    expect(vics.length).toBeLessThan(MAX)

    // 3. Into that full budget, logouts that end nothing by another principal (a viewer token of no account): still no action.
    const other = await p.mint('--role', 'viewer', '--name', 'other')
    for (let i = 0; i < 2 * MAX; i += 4) {
      const statuses = await Promise.all(Array.from({ length: 4 }, () => p.api(other.token, 'POST', '/logout').then((r) => r.status)))
      expect(statuses.every((s) => s === 200)).toBe(true)
    }
    entries = await p.audit(her.token)
    expect(hers(entries)).toEqual(['project.deploy ok', 'token.mint ok', 'account.add ok'])
    expect(entries.filter((e) => e.principal === 'vic' && e.action === 'token.mint').length).toBe(vics.length)
  })

  test('a token named `superadmin` minted by an account-less token is `token:<id>`, never her', { timeout: 90_000 }, async () => {
    using dir = tmpDir()
    await using p = await platform(dir.path).then((x) => Object.assign(x, { [Symbol.asyncDispose]: () => x.serve.stop().then(() => {}) }))
    const her = await superadminActs(p)
    // What `admin api-token --role operator` makes: a token tied to no account. It mints a child named like her.
    const ops = await p.mint('--role', 'operator', '--name', 'ops')
    const child = (await (await p.api(ops.token, 'POST', '/api/v1/api-tokens', { name: 'superadmin' })).json()) as { token: string; id: string; name: string }
    expect(child.name).toBe('superadmin')
    const env = { MUSTER_URL: p.serve.url, MUSTER_TOKEN: child.token }
    expect((await runMuster(['projects', 'deploy', 'planted', '--replicas', '0', '--', 'sleep', '1'], { env })).code).toBe(0)
    expect((await runMuster(['nodes', 'drain', 'ghost'], { env })).code).toBe(1)
    // Someone presents her token's id with a wrong secret: a refusal by nobody known.
    expect((await p.api(`mat_${her.id}.${'A'.repeat(43)}`, 'DELETE', '/api/v1/projects/web')).status).toBe(401)

    const mine = await p.audit(her.token, '--principal', 'superadmin')
    expect(mine.map((e) => `${e.action} ${e.target}`)).toEqual(['project.deploy web', 'token.mint', 'account.add vic'].map((s) => (s === 'token.mint' ? expect.stringMatching(/^token\.mint /) : s)))
    expect(mine.every((e) => e.principal === 'superadmin')).toBe(true)
    const all = await p.audit(her.token)
    const planted = all.find((e) => e.action === 'project.deploy' && e.target === 'planted')!
    // The child acts as the token that minted it (the one the host made): tokenId says which token of that lineage wrote.
    expect(planted).toMatchObject({ principal: `token:${ops.id}`, principalKind: 'api-token', tokenId: child.id })
    expect(all.find((e) => e.action === 'token.mint' && e.principalKind === 'api-token' && e.tokenId === ops.id)).toMatchObject({ principal: `token:${ops.id}` })
    expect(all.find((e) => e.action === 'project.remove')).toMatchObject({ principal: '(unknown)', principalKind: 'anonymous', tokenId: her.id, outcome: 'denied' })
    // The table says the same.
    const table = await runMuster(['audit'], { env: { MUSTER_URL: p.serve.url, MUSTER_TOKEN: her.token } })
    expect(table.stdout.split('\n').find((l) => l.includes('planted'))).toContain(`token:${ops.id} (api-token)`)
    expect(table.stdout.split('\n').filter((l) => l.includes('superadmin (')).length).toBe(3)
    // And `projects show` names who deployed it the same way.
    const shown = JSON.parse((await runMuster(['projects', 'show', 'planted', '--json'], { env })).stdout) as { deployedBy: string }
    expect(shown.deployedBy).toBe(`token:${ops.id}`)
  })

  test('an account-less token minting a child per write buys no more of the budget: seventy children leave the superadmin’s actions', { timeout: 120_000 }, async () => {
    using dir = tmpDir()
    await using p = await platform(dir.path).then((x) => Object.assign(x, { [Symbol.asyncDispose]: () => x.serve.stop().then(() => {}) }))
    const her = await superadminActs(p)
    const ops = await p.mint('--role', 'operator', '--name', 'ops')
    // Each child is a token of its own and writes once (it mints a grandchild), and each grandchild writes once
    // too (a great-grandchild): 1.4 times the budget of distinct tokens at each depth.
    const writers: string[] = []
    for (let i = 0; i < 70; i += 10) {
      await Promise.all(
        Array.from({ length: 10 }, async (_, j) => {
          const res = await p.api(ops.token, 'POST', '/api/v1/api-tokens', { name: `c${i + j}` })
          expect(res.status).toBe(200)
          const child = (await res.json()) as { token: string; id: string }
          const res2 = await p.api(child.token, 'POST', '/api/v1/api-tokens', { name: 'g' })
          expect(res2.status).toBe(200)
          const grandchild = (await res2.json()) as { token: string; id: string }
          expect((await p.api(grandchild.token, 'POST', '/api/v1/api-tokens', { name: 'gg' })).status).toBe(200)
          writers.push(child.id, grandchild.id)
        }),
      )
    }
    const entries = await p.audit(her.token)
    expect(hers(entries)).toEqual(['project.deploy ok', 'token.mint ok', 'account.add ok'])
    // The descendants' writes are there, each under the lineage's one name, each naming the token that wrote it.
    const byChildren = entries.filter((e) => e.tokenId !== null && writers.includes(e.tokenId))
    expect(byChildren.length).toBeGreaterThan(0)
    expect(new Set(byChildren.map((e) => e.principal))).toEqual(new Set([`token:${ops.id}`]))
    expect(new Set(byChildren.map((e) => e.tokenId)).size).toBe(byChildren.length)
    expect((await p.audit(her.token, '--principal', `token:${ops.id}`)).length).toBeGreaterThan(byChildren.length - 1)
  })
})
