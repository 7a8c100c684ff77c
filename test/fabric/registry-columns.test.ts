// The registry keeps its nodes in columns (src/fabric/node-table.ts) and the
// heartbeat's fast path reads them, the credential's mac included: a revoke,
// a rebind or a rotation moves the columns at once, so a credential that
// stopped being valid is refused at the very next heartbeat, through the
// real route; a name rebound to a new machine takes a new slot, so a view of
// the old machine never reads the new one's fields; and a flush writes every
// node heard from, chunk after chunk; a Platform reads every heartbeat another
// Platform wrote, across the slices its read yields between.
import { describe, expect, test } from 'bun:test'
import { hotPathStats } from '../../src/http/heartbeat.ts'
import { pullHeartbeats } from '../../src/fabric/heartbeat-pull.ts'
import { Registry } from '../../src/fabric/registry.ts'
import { VERSION } from '../../src/version.ts'
import { enrollRaw, newCert } from '../helpers/certs.ts'
import { onEngine, startPlatform, type TestPlatform } from '../helpers/platform.ts'
import { ENGINES } from '../helpers/postgres.ts'
import { seedNodes } from '../helpers/seed-nodes.ts'

const body = JSON.stringify({ version: VERSION, capacity: { cpuMillis: 2000, memoryMB: 4096 }, replicas: [] })

async function enrolled(p: TestPlatform, name: string, token?: string): Promise<{ credential: string; certSha256: string }> {
  token ??= (await p.client.nodes.createEnrollment({ nodeId: name })).token
  const r = await enrollRaw(p.url, { token, nodeId: name, certPem: (await newCert()).certPem, version: VERSION })
  expect(r.status).toBe(200)
  const credential = ((await r.json()) as { credential: string }).credential
  return { credential, certSha256: p.platform.fabric.registry.get(name)!.certSha256! }
}

/** One heartbeat through the dedicated route: status, error code, and whether the fast path took it. */
async function beat(p: TestPlatform, credential: string): Promise<{ status: number; code?: string; fast: boolean }> {
  const before = hotPathStats.fast
  const r = await fetch(`${p.url}/api/v1/nodes/register`, { method: 'POST', headers: { authorization: `Bearer ${credential}`, 'content-type': 'application/json' }, body })
  const answer = (await r.json()) as { error?: { code: string } }
  return { status: r.status, ...(answer.error ? { code: answer.error.code } : {}), fast: hotPathStats.fast > before }
}

describe.each(ENGINES)('on %s', (engine) => {
  onEngine(engine)

  test('a revoked, rebound or rotated-away credential is refused at the next heartbeat, after the fast path accepted it', async () => {
    await using p = await startPlatform({ remoteDispatch: true })
    const a = await enrolled(p, 'col-a')
    const b = await enrolled(p, 'col-b')
    const c = await enrolled(p, 'col-c')
    // Each heartbeats on the fast path first (its mac is computed and kept in the registry's column).
    for (const n of [a, b, c]) for (let i = 0; i < 3; i++) expect(await beat(p, n.credential)).toEqual({ status: 200, fast: true })

    await p.client.nodes.revoke('col-a')
    expect(await beat(p, a.credential)).toEqual({ status: 403, code: 'node-revoked', fast: false })

    await p.client.nodes.rebind('col-b')
    expect(await beat(p, b.credential)).toEqual({ status: 401, code: 'unauthorized', fast: false })

    // A rotation: the new generation is current at once (fast path); the old one only through its grace hour.
    const { generation } = await p.client.nodes.rotate('col-c')
    const next = p.platform.fabric.credentials.issue('col-c', c.certSha256, generation)
    expect(await beat(p, next)).toEqual({ status: 200, fast: true })
    expect(await beat(p, c.credential)).toEqual({ status: 200, fast: false })
    p.advance(3_600_000 + 1_000)
    expect(await beat(p, c.credential)).toEqual({ status: 401, code: 'unauthorized', fast: false })
    expect(await beat(p, next)).toEqual({ status: 200, fast: true })
  })

  test('a name rebound to a new machine takes a new slot: a view of the old machine reads the old machine', async () => {
    await using p = await startPlatform({ remoteDispatch: true })
    const registry = p.platform.fabric.registry
    const old = await enrolled(p, 'col-r')
    expect(await beat(p, old.credential)).toEqual({ status: 200, fast: true })
    const before = registry.get('col-r')!
    const rebound = await p.client.nodes.rebind('col-r')
    const fresh = await enrolled(p, 'col-r', rebound.token)
    const now = registry.get('col-r')!
    expect(now.slot).not.toBe(before.slot)
    expect(before.certSha256).toBe(old.certSha256)
    expect(now.certSha256).toBe(fresh.certSha256)
    expect(now.lastSeenAt).toBeNull() // the new machine starts unseen: the old one's heartbeat is not its
    expect(await beat(p, fresh.credential)).toEqual({ status: 200, fast: true })
    expect(await beat(p, old.credential)).toEqual({ status: 401, code: 'unauthorized', fast: false })
    // Removed and enrolled again: a new slot too; the removed machine's view still reads it.
    await p.client.nodes.revoke('col-r')
    const gone = registry.get('col-r')!
    await p.client.nodes.remove('col-r', { force: true })
    expect(registry.get('col-r')).toBeUndefined()
    expect(gone.revokedAt).not.toBeNull()
    expect(gone.name).toBe('col-r')
  })

  test('a flush writes every node heard from, chunk after chunk', async () => {
    await using p = await startPlatform({ remoteDispatch: true, keepDir: true })
    const names = Array.from({ length: 1_234 }, (_, i) => `col-f-${String(i).padStart(4, '0')}`)
    await seedNodes(p.platform.store, names, () => 'enrolled')
    const registry = p.platform.fabric.registry
    for (const name of names) await registry.refresh(name)
    for (const name of names) registry.heartbeat(registry.get(name)!, { version: VERSION, capacity: { cpuMillis: 1000, memoryMB: 512 }, replicas: [] })
    await registry.flush()
    const rows = await p.platform.store.all<{ name: string; cpu_millis: number }>("SELECT name, cpu_millis FROM node_heartbeats WHERE name LIKE 'col-f-%' ORDER BY name")
    expect(rows.map((r) => r.name)).toEqual(names)
    expect(rows.every((r) => Number(r.cpu_millis) === 1000)).toBe(true)
  })

  test('a Platform reads every heartbeat another Platform wrote, across the slices of its read', async () => {
    await using p = await startPlatform({ remoteDispatch: true })
    const db = p.platform.store
    const now = () => p.platform.fabric.now()
    // More rows than two slices of the read (2,000 each): the event loop gets a turn twice.
    const names = Array.from({ length: 4_500 }, (_, i) => `col-r-${String(i).padStart(4, '0')}`)
    await seedNodes(db, names, () => 'enrolled')
    // Two more Platforms' registries on the same store: one takes the beats, the other reads them.
    const taker = await Registry.load(db, now, 90_000, 'platform-taker')
    const reader = await Registry.load(db, now, 90_000, 'platform-reader')
    for (const name of names) taker.heartbeat(taker.get(name)!, { version: VERSION, capacity: { cpuMillis: 1500, memoryMB: 1024 }, replicas: [] })
    await taker.flush()
    const heard = new Set<string>()
    reader.onRemoteHeartbeat = (n) => heard.add(n.name)
    await pullHeartbeats(db, 'platform-reader', reader)
    expect(heard.size).toBe(names.length)
    const missed = names.filter((name) => reader.get(name)!.lastSeenAt !== taker.get(name)!.lastSeenAt || reader.get(name)!.cpuMillis !== 1500)
    expect(missed).toEqual([])
  })
})

test('a node entry is a view of its slot: fields() copies them as plain data', async () => {
  await using p = await startPlatform({ remoteDispatch: true })
  const { certSha256 } = await enrolled(p, 'col-v')
  const n = p.platform.fabric.registry.get('col-v')!
  const f = n.fields()
  expect(f).toMatchObject({ name: 'col-v', auth: 'enrolled', certSha256, generation: 1, drained: false, revokedAt: null, lastSeenAt: null, replicas: [], labels: {} })
  n.drained = true
  expect(p.platform.fabric.registry.get('col-v')!.drained).toBe(true)
  expect(f.drained).toBe(false)
})

test('a node that enrolls with an address after the start is probed again each interval (the probe rounds walk the addressed nodes)', async () => {
  await using p = await startPlatform({ remoteDispatch: true, probeIntervalMs: 60_000 })
  const { token } = await p.client.nodes.createEnrollment({ nodeId: 'col-p' })
  // An address nothing answers at: each probe fails, and records when it ran.
  const r = await enrollRaw(p.url, { token, nodeId: 'col-p', certPem: (await newCert()).certPem, version: VERSION, url: 'https://127.0.0.1:9' })
  expect(r.status).toBe(200)
  const registry = p.platform.fabric.registry
  expect(registry.addressed.has('col-p')).toBe(true)
  await p.platform.prober.probeDue() // not heartbeating yet: not probed
  expect(registry.get('col-p')!.probe).toBeUndefined()
  registry.heartbeat(registry.get('col-p')!, {})
  await p.platform.prober.probe('col-p')
  const first = registry.get('col-p')!.probe!.at
  p.advance(61_000)
  registry.heartbeat(registry.get('col-p')!, {})
  await p.platform.prober.probeDue()
  expect(registry.get('col-p')!.probe!.at).toBeGreaterThan(first)
})
