// Listings that page: nodes by name with state, label and prefix
// filters and counts by state; projects; the enrollment audit. Every page is
// walked and checked against the whole, and bad parameters are 400.
import { describe, expect, test } from 'bun:test'
import { VERSION } from '../../src/version.ts'
import { enrollRaw, newCert } from '../helpers/certs.ts'
import { ENGINES } from '../helpers/postgres.ts'
import { onEngine, startPlatform, type TestPlatform } from '../helpers/platform.ts'
import { seedNodes, type SeedKind } from '../helpers/seed-nodes.ts'

// Seeded 'ready' nodes were seen when seeded and 'unreachable' ones an hour before: ready for 30 minutes, however slow the machine.
const STALE_MS = 30 * 60_000
const KINDS: SeedKind[] = ['ready', 'ready', 'unreachable', 'enrolled', 'revoked']
// Labels the nodes reported at enroll: every seventh is a build node, every third in zone a.
const LABELS = (i: number): Record<string, string> | null => (i % 7 === 0 ? { role: 'build', zone: i % 3 === 0 ? 'a' : 'b' } : i % 3 === 0 ? { zone: 'a' } : null)
// Names whose code-unit order is not their locale order, and prefixes that share a start.
const NAMES = Array.from({ length: 2345 }, (_, i) => (i % 3 === 0 ? `rack-${i}` : i % 3 === 1 ? `rack${i}` : `db-${i}`))

async function withFleet(fn: (p: TestPlatform) => Promise<void>) {
  const first = await startPlatform({ remoteDispatch: true, keepDir: true, nodeStaleAfterMs: STALE_MS })
  await seedNodes(first.platform.store, NAMES, (i) => KINDS[i % KINDS.length]!, Date.now(), LABELS)
  await first.close()
  // Started again: the registry loads the seeded nodes (with the local node, which leads the listing when it runs).
  await using p = await startPlatform({ remoteDispatch: true, dataDir: first.dataDir, nodeStaleAfterMs: STALE_MS, localNode: true })
  await fn(p)
}

const get = (p: TestPlatform, path: string) => fetch(`${p.url}${path}`, { headers: { authorization: `Bearer ${p.token}` } })

describe.each(ENGINES)('on %s', (engine) => {
  onEngine(engine)

  test('nodes page in name order, local first; filters select, counts stay whole', async () => {
    await withFleet(async (p) => {
      const sorted = [...NAMES].sort()
      // No parameters: the first 1000 (local and 999 more), the shape callers had, plus nextCursor and counts.
      const first = await p.client.nodes.list()
      expect(first.nodes).toHaveLength(1000)
      expect(first.nodes.map((n) => n.name)).toEqual(['local', ...sorted.slice(0, 999)])
      expect(first.nextCursor).toEqual(expect.any(String))
      expect(first.pendingEnrollments).toEqual([])
      const expected = { total: NAMES.length + 1, ready: 0, unreachable: 0, enrolled: 0, revoked: 0 }
      NAMES.forEach((_, i) => expected[KINDS[i % KINDS.length]!]++)
      expected.ready++ // local
      expect(first.counts).toEqual(expected)

      // Every page, walked: each node once, in order.
      const seen: string[] = []
      let cursor: string | undefined
      let pages = 0
      do {
        const page = await p.client.nodes.list({ limit: 700, cursor })
        expect(page.nodes.length).toBeLessThanOrEqual(700)
        seen.push(...page.nodes.map((n) => n.name))
        cursor = page.nextCursor ?? undefined
        pages++
      } while (cursor)
      expect(seen).toEqual(['local', ...sorted])
      expect(pages).toBe(Math.ceil((NAMES.length + 1) / 700))
      expect((await p.client.nodes.listAll({ limit: 5000 })).nodes.map((n) => n.name)).toEqual(['local', ...sorted])

      // limit 1: local alone, then the first name (a cursor at local starts from the first name).
      const one = await p.client.nodes.list({ limit: 1 })
      expect(one.nodes.map((n) => n.name)).toEqual(['local'])
      expect((await p.client.nodes.list({ limit: 1, cursor: one.nextCursor! })).nodes.map((n) => n.name)).toEqual(sorted.slice(0, 1))

      // state: only that state, every page; counts are the same as without it.
      const unreachable = await p.client.nodes.listAll({ state: 'unreachable', limit: 100 })
      expect(unreachable.nodes.map((n) => n.name)).toEqual(sorted.filter((n) => KINDS[NAMES.indexOf(n) % KINDS.length] === 'unreachable'))
      expect(unreachable.nodes.every((n) => n.state === 'unreachable')).toBe(true)
      expect(unreachable.counts).toEqual(expected)
      expect((await p.client.nodes.list({ state: 'revoked' })).nodes.every((n) => n.state === 'revoked' && n.name !== 'local')).toBe(true)

      // q: a name prefix, paged, with counts over the prefix only.
      const rackDash = sorted.filter((n) => n.startsWith('rack-'))
      const byPrefix = await p.client.nodes.listAll({ q: 'rack-', limit: 97 })
      expect(byPrefix.nodes.map((n) => n.name)).toEqual(rackDash)
      expect(byPrefix.counts.total).toBe(rackDash.length)
      expect((await p.client.nodes.list({ q: 'loc' })).nodes.map((n) => n.name)).toEqual(['local'])
      expect((await p.client.nodes.list({ q: 'zz' })).nodes).toEqual([])
      // label: the nodes that reported it, every page, with counts over them only (local carries none).
      const build = sorted.filter((n) => LABELS(NAMES.indexOf(n))?.role === 'build')
      const byLabel = await p.client.nodes.listAll({ label: 'role=build', limit: 50 })
      expect(byLabel.nodes.map((n) => n.name)).toEqual(build)
      expect(byLabel.nodes.every((n) => n.labels.role === 'build')).toBe(true)
      expect(byLabel.counts.total).toBe(build.length)
      const zoneA = sorted.filter((n) => LABELS(NAMES.indexOf(n))?.zone === 'a' && n.startsWith('rack-'))
      expect((await p.client.nodes.listAll({ label: 'zone=a', q: 'rack-', state: 'ready' })).nodes.map((n) => n.name)).toEqual(zoneA.filter((n) => KINDS[NAMES.indexOf(n) % KINDS.length] === 'ready'))
      expect((await p.client.nodes.list({ label: 'role=none' })).counts.total).toBe(0)
    })
  })

  test('a bad limit, cursor, state, label or prefix is 400 naming it', async () => {
    await using p = await startPlatform({ remoteDispatch: true })
    for (const [query, field] of [
      ['limit=0', 'limit'],
      ['limit=5001', 'limit'],
      ['limit=ten', 'limit'],
      ['cursor=%2F%2F', 'cursor'],
      [`cursor=${Buffer.from('Not A Name').toString('base64url')}`, 'cursor'],
      ['cursor=bm9kZQ==', 'cursor'],
      ['state=sleepy', 'state'],
      ['label=noequals', 'label'],
      ['label=Role%3Dbuild', 'label'],
      ['label=role%3D', 'label'],
      ['q=UPPER', 'q'],
    ] as const) {
      const r = await get(p, `/api/v1/nodes?${query}`)
      expect(`${query} ${r.status}`).toBe(`${query} 400`)
      expect(((await r.json()) as { error: { detail: { field: string } } }).error.detail.field).toBe(field)
    }
    expect((await get(p, '/api/v1/projects?limit=0')).status).toBe(400)
    expect((await get(p, '/api/v1/nodes/audit?cursor=eA')).status).toBe(400)
    expect((await get(p, '/api/v1/nodes?limit=5000')).status).toBe(200)
  })

  test('projects and the enrollment audit page too', async () => {
    await using p = await startPlatform({ remoteDispatch: true })
    for (const name of ['web', 'api', 'db', 'cache', 'queue']) await p.client.projects.deploy({ name, command: ['true'], replicas: 0 })
    const a = await p.client.projects.list({ limit: 2 })
    expect(a.projects.map((x) => x.name)).toEqual(['api', 'cache'])
    const b = await p.client.projects.list({ limit: 2, cursor: a.nextCursor! })
    expect(b.projects.map((x) => x.name)).toEqual(['db', 'queue'])
    const c = await p.client.projects.list({ limit: 2, cursor: b.nextCursor! })
    expect(c).toEqual({ projects: [expect.objectContaining({ name: 'web' })], nextCursor: null })
    expect((await p.client.projects.listAll({ limit: 1 })).map((x) => x.name)).toEqual(['api', 'cache', 'db', 'queue', 'web'])
    expect((await p.client.projects.list()).nextCursor).toBeNull()

    // Seven refused enrolls: the audit pages newest first, and new entries do not shift the pages.
    const certPem = (await newCert()).certPem
    for (let i = 0; i < 7; i++) await enrollRaw(p.url, { token: 'mjt_aaaaaaaaaaaaaaaa.bad', nodeId: `n${i}`, certPem, version: VERSION })
    const whole = (await p.client.nodes.audit()).entries
    expect(whole.map((e) => e.nodeId)).toEqual(['n6', 'n5', 'n4', 'n3', 'n2', 'n1', 'n0'])
    const p1 = await p.client.nodes.audit({ limit: 3 })
    await enrollRaw(p.url, { token: 'mjt_aaaaaaaaaaaaaaaa.bad', nodeId: 'later', certPem, version: VERSION })
    const p2 = await p.client.nodes.audit({ limit: 3, cursor: p1.nextCursor! })
    const p3 = await p.client.nodes.audit({ limit: 3, cursor: p2.nextCursor! })
    expect([...p1.entries, ...p2.entries, ...p3.entries].map((e) => e.nodeId)).toEqual(['n6', 'n5', 'n4', 'n3', 'n2', 'n1', 'n0'])
    expect(p3.nextCursor).toBeNull()
    expect(Object.keys(p1.entries[0]!).sort()).toEqual(['at', 'nodeId', 'outcome', 'reason', 'version'])
  })
})
