// Listings at fleet size: from 50,000 nodes on the counts by state
// come from the registry's cache (Registry.stateCounts), which a change to a
// node drops at once; a name prefix counts only its own names; and the names
// in order take a new node in, and let a removed one go, without a new sort.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { VERSION } from '../../src/version.ts'
import { enrollRaw, newCert } from '../helpers/certs.ts'
import { seedNodes, type SeedKind } from '../helpers/seed-nodes.ts'
import { startPlatform, type TestPlatform } from '../helpers/platform.ts'

const COUNT = 60_000
const KINDS: SeedKind[] = ['ready', 'ready', 'unreachable', 'enrolled', 'revoked']
const names = Array.from({ length: COUNT }, (_, i) => `node-${String(i).padStart(6, '0')}`)
let p: TestPlatform

beforeAll(async () => {
  const first = await startPlatform({ remoteDispatch: true, keepDir: true, nodeStaleAfterMs: 30 * 60_000 })
  await seedNodes(first.platform.store, names, (i) => KINDS[i % KINDS.length]!)
  await first.close()
  p = await startPlatform({ remoteDispatch: true, dataDir: first.dataDir, nodeStaleAfterMs: 30 * 60_000 })
}, 180_000)

afterAll(async () => {
  await p?.close()
})

type Page = { nodes: { name: string; state: string }[]; counts: Record<string, number>; nextCursor: string | null }
const list = async (query = ''): Promise<Page> => (await (await fetch(`${p.url}/api/v1/nodes${query}`, { headers: { authorization: `Bearer ${p.token}` } })).json()) as Page

/** The counts by state, counted node by node here. */
function counted(prefix = ''): Record<string, number> {
  const r = p.platform.fabric.registry
  const c: Record<string, number> = { total: 0, enrolled: 0, ready: 0, unreachable: 0, revoked: 0 }
  for (const n of r.nodes.values()) {
    if (!n.name.startsWith(prefix)) continue
    c.total!++
    c[r.state(n).state]!++
  }
  return c
}

test('the counts at 60,000 nodes are the registry\'s, and follow a change at once', async () => {
  expect((await list('?limit=100')).counts).toEqual(counted())
  const ready = (await list('?state=ready&limit=1')).nodes[0]!.name
  await p.client.nodes.revoke(ready)
  const after = (await list('?limit=100')).counts
  expect(after).toEqual(counted())
  expect(after.revoked).toBe(COUNT / KINDS.length + 1)
})

test('a name prefix counts its own names, the same as counting every node', async () => {
  for (const prefix of ['node-0123', 'node-05999', 'node-1', 'nobody']) {
    expect((await list(`?q=${prefix}&limit=5`)).counts).toEqual(counted(prefix))
  }
})

test('a node that comes or goes takes its place in name order, and the pages walk every name once', async () => {
  const { token } = await p.client.nodes.createEnrollment({ nodeId: 'node-030000a' })
  const r = await enrollRaw(p.url, { token, nodeId: 'node-030000a', certPem: (await newCert()).certPem, version: VERSION })
  expect(r.status).toBe(200)
  await p.client.nodes.remove('node-000007', { force: true })
  const sorted = p.platform.fabric.registry.sortedNames()
  expect(sorted.length).toBe(COUNT)
  for (let i = 1; i < sorted.length; i++) if (!(sorted.at(i - 1)! < sorted.at(i)!)) throw new Error(`out of order at ${i}: ${sorted.at(i - 1)} ${sorted.at(i)}`)
  const around = await list('?q=node-03000&limit=3')
  expect(around.nodes.map((n) => n.name)).toEqual(['node-030000', 'node-030000a', 'node-030001'])
  expect((await list('?q=node-00000&limit=20')).nodes.map((n) => n.name)).not.toContain('node-000007')
  expect((await list('?limit=100')).counts).toEqual(counted())
  expect((await list('?limit=100')).counts.total).toBe(COUNT)
})

test('a node seen again moves from its old count to ready at once', async () => {
  const r = p.platform.fabric.registry
  const silent = (await list('?state=unreachable&limit=1')).nodes[0]!.name
  r.heartbeat(r.get(silent)!, {})
  const after = (await list('?limit=100')).counts
  expect(after).toEqual(counted())
  expect((await list(`?q=${silent}&limit=1`)).nodes[0]!.state).toBe('ready')
})
