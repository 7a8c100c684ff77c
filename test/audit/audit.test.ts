// one audit of every action. Written before the action runs
// (no audit, no action), kept on two budgets (refusals cannot flush actions),
// read newest first in pages, filtered, followed.
import { describe, expect, test } from 'bun:test'
import { ENGINES } from '../helpers/postgres.ts'
import { onEngine, startPlatform } from '../helpers/platform.ts'
import { MusterError } from '../../src/errors.ts'
import { AUDITED_ROUTES, UNAUDITED_WRITES, matchAudited } from '../../src/http/audit-actions.ts'

const json = { 'content-type': 'application/json' }

describe.each(ENGINES)('on %s', (engine) => {
  onEngine(engine)

  describe('the audit of every action', () => {
  test('every write route of the Platform is named in the audit table, or is node and office protocol', async () => {
    await using p = await startPlatform()
    const writes = p.platform.app.routes.filter((r) => !['GET', 'HEAD', 'OPTIONS'].includes(r.method)).map((r) => `${r.method} ${r.path}`)
    expect(writes.length).toBeGreaterThan(30)
    const unnamed = writes.filter((w) => {
      const [method, path] = w.split(' ') as [string, string]
      return matchAudited(method, path.replace(/:(\w+)/g, 'x')) === undefined
    })
    expect(unnamed).toEqual([])
    // and the table names nothing that is not a route (a renamed route would leave a stale entry)
    const all = new Set(p.platform.app.routes.map((r) => `${r.method} ${r.path}`))
    for (const r of [...AUDITED_ROUTES, ...UNAUDITED_WRITES]) expect(all).toContain(`${r.method} ${r.path}`)
  })

  test('each write is recorded with time, principal and kind, source, action, target and outcome', async () => {
    await using p = await startPlatform()
    const before = Date.now()
    await p.client.accounts.add({ name: 'olga', role: 'operator', password: 'olga-password-123' })
    await p.client.nodes.drain('ghost').catch(() => {})
    const viewer = await p.platform.auth.mintApiToken({ name: 'ci-viewer', role: 'viewer' })
    await p.clientWith(viewer.token).projects.deploy({ name: 'web', command: ['sleep', '1'], replicas: 0 }).catch(() => {})
    await fetch(`${p.url}/api/v1/projects`, { method: 'POST', headers: json, body: '{"name":"anon","command":["x"],"replicas":0}' })
    const { entries } = await p.client.audit.list()
    // a token tied to no account is `token:<id>`, never its name (which its minter chose)
    const test = `token:${p.token.slice(4, 20)}`
    expect(entries.map((e) => [e.action, e.target, e.principal, e.principalKind, e.outcome, e.detail])).toEqual([
      ['project.deploy', 'anon', '(unknown)', 'anonymous', 'denied', 'unauthorized'],
      ['project.deploy', 'web', `token:${viewer.id}`, 'api-token', 'denied', 'forbidden'],
      ['node.drain', 'ghost', test, 'api-token', 'refused', 'not-found'],
      ['account.add', 'olga', test, 'api-token', 'ok', 'role=operator'],
    ])
    for (const e of entries) {
      expect(e.source).toBe('127.0.0.1')
      expect(Date.parse(e.at)).toBeGreaterThanOrEqual(before - 5)
    }
    expect(entries[1]!.tokenId).toBe(viewer.id)
    // what was done is on the actions budget; what was refused or denied, by anyone, on the refusals budget
    const budgets = await p.platform.store.all<{ action: string; budget: string }>('SELECT action, budget FROM audit_log ORDER BY id')
    expect(budgets.map((b) => b.budget)).toEqual(['actions', 'refusals', 'refusals', 'refusals'])
  })

  test('an action whose audit entry cannot be written does not run', async () => {
    await using p = await startPlatform()
    await p.platform.store.script('ALTER TABLE audit_log RENAME TO audit_log_gone') // every write to the audit fails
    const refused = (await p.client.accounts.add({ name: 'olga', role: 'operator', password: 'olga-password-123' }).catch((e: MusterError) => e)) as MusterError
    expect([refused.code, refused.detail?.status]).toEqual(['audit-unavailable', 503])
    expect(await p.platform.store.get('SELECT name FROM accounts WHERE name = ?1', 'olga')).toBeNull()
    const deploy = (await p.client.projects.deploy({ name: 'web', command: ['sleep', '1'], replicas: 0 }).catch((e: MusterError) => e)) as MusterError
    expect(deploy.code).toBe('audit-unavailable')
    expect(p.platform.projects.list().projects).toEqual([])
    const pw = await p.platform.store.get<{ n: number }>('SELECT COUNT(*) AS n FROM sessions')
    const login = await fetch(`${p.url}/login`, { method: 'POST', headers: json, body: '{"identifier":"superadmin","password":"x"}' })
    expect(login.status).toBe(503)
    expect(await p.platform.store.get<{ n: number }>('SELECT COUNT(*) AS n FROM sessions')).toEqual(pw)
    // reads go on
    expect((await p.client.accounts.list()).accounts.map((a) => a.name)).toEqual(['superadmin'])
  })

  test('a flood of failed logins cannot push an action out; both budgets keep their count and age', async () => {
    await using p = await startPlatform({ auditRetention: { maxEntries: 10, maxAgeMs: 86_400_000 } })
    await p.client.accounts.add({ name: 'olga', role: 'operator', password: 'olga-password-123' })
    for (let i = 0; i < 40; i++) {
      await fetch(`${p.url}/login`, { method: 'POST', headers: json, body: JSON.stringify({ identifier: `nobody${i}`, password: 'wrong-password' }) })
    }
    // an unknown name tried is never written down (it may be a password typed in the wrong field)
    const logins = (await p.client.audit.listAll()).filter((e) => e.action === 'login')
    expect(logins).toHaveLength(10)
    expect(JSON.stringify(logins)).not.toContain('nobody')
    // nor can a principal's flood of refused writes
    const viewer = await p.platform.auth.mintApiToken({ name: 'noisy', role: 'viewer' })
    for (let i = 0; i < 15; i++) await p.clientWith(viewer.token).nodes.drain(`junk${i}`).catch(() => {})
    const all = await p.client.audit.listAll()
    expect(all.filter((e) => e.action === 'account.add')).toHaveLength(1)
    expect(all.filter((e) => e.action === 'login' || e.principal === `token:${viewer.id}`)).toHaveLength(10)
    for (let i = 0; i < 12; i++) await p.client.projects.deploy({ name: `p${i}`, command: ['sleep', '1'], replicas: 0 })
    expect((await p.client.audit.listAll()).filter((e) => e.action === 'account.add')).toHaveLength(0) // pushed out by actions, as it should be
    p.advance(86_400_000 + 1000)
    await p.client.nodes.drain('later').catch(() => {})
    expect((await p.client.audit.listAll()).map((e) => e.target)).toEqual(['later'])
  })

  test('read newest first in pages, filtered by time, principal and action; `after` follows', async () => {
    await using p = await startPlatform()
    for (let i = 0; i < 5; i++) await p.client.nodes.drain(`n${i}`).catch(() => {})
    await p.client.accounts.add({ name: 'olga', role: 'operator', password: 'olga-password-123' })
    const olga = await p.platform.auth.mintApiToken({ name: 'olga-cli', role: 'operator', account: 'olga' })
    await p.clientWith(olga.token).nodes.drain('n9').catch(() => {})
    const first = await p.client.audit.list({ limit: 3 })
    expect(first.entries.map((e) => e.target)).toEqual(['n9', 'olga', 'n4'])
    const second = await p.client.audit.list({ limit: 3, cursor: first.nextCursor! })
    expect(second.entries.map((e) => e.target)).toEqual(['n3', 'n2', 'n1'])
    expect((await p.client.audit.listAll({ limit: 2 })).map((e) => e.target)).toEqual(['n9', 'olga', 'n4', 'n3', 'n2', 'n1', 'n0'])
    expect((await p.client.audit.list({ principal: 'olga' })).entries.map((e) => e.target)).toEqual(['n9'])
    expect((await p.client.audit.list({ action: 'node' })).entries).toHaveLength(6)
    expect((await p.client.audit.list({ action: 'node.drain' })).entries).toHaveLength(6)
    expect((await p.client.audit.list({ action: 'nod' })).entries).toHaveLength(0)
    expect((await p.client.audit.list({ action: 'account' })).entries.map((e) => e.action)).toEqual(['account.add'])
    expect((await p.client.audit.list({ since: new Date(Date.now() + 60_000).toISOString() })).entries).toEqual([])
    const n2 = first.entries[2]!.id
    expect((await p.client.audit.after(n2)).entries.map((e) => e.target)).toEqual(['olga', 'n9'])
    for (const q of ['since=yesterday', 'after=x', 'cursor=zz', 'limit=0', 'action=a%25b']) {
      const r = await fetch(`${p.url}/api/v1/audit?${q}`, { headers: { authorization: `Bearer ${p.token}` } })
      expect([q, r.status]).toEqual([q, 400])
    }
    // only server.audit.view reads it
    const op = await p.platform.auth.mintApiToken({ name: 'op', role: 'operator' })
    expect(((await p.clientWith(op.token).audit.list().catch((e: MusterError) => e)) as MusterError).code).toBe('forbidden')
  })
})
})
