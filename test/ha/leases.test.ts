// Leases at the store level (docs/storage-ha.md): one holder per loop judged by the
// database's clock, takeover once the holder stops renewing, and fencing — a
// paused old holder's write is refused after another Platform took over. Each
// "Platform" here is its own connection pool on one PostgreSQL database.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { join } from 'node:path'
import { openStore, type Store } from '../../src/store/db.ts'
import { acquireLease, checkFence } from '../../src/store/leases.ts'
import { LeaseLost, Leases } from '../../src/context/leases.ts'
import { freshDatabase } from '../helpers/postgres.ts'
import { tmpDir, waitFor } from '../helpers/tmp.ts'

const TTL = 600

describe('leases on postgres', () => {
  let db: { url: string; drop(): Promise<void> }
  let a: Store
  let b: Store
  beforeAll(async () => {
    db = await freshDatabase()
    a = await openStore(db.url)
    b = await openStore(db.url)
    await a.script('CREATE TABLE fenced_writes (id INTEGER PRIMARY KEY, by TEXT NOT NULL)')
  })
  afterAll(async () => {
    await a.close()
    await b.close()
    await db.drop()
  })

  test('one holder at a time; another takes over once it stops renewing, with a higher fence', async () => {
    const first = await acquireLease(a, 't1', 'a', TTL)
    expect(first?.fence).toBe(1)
    expect(await acquireLease(b, 't1', 'b', TTL)).toBeNull()
    // renewing keeps the fence; nobody else held it meanwhile
    expect((await acquireLease(a, 't1', 'a', TTL))?.fence).toBe(1)
    const taken = await waitFor(() => acquireLease(b, 't1', 'b', TTL), { timeoutMs: 5_000, intervalMs: 50, what: 'b takes the lease' })
    expect(taken.fence).toBe(2)
    expect(await acquireLease(a, 't1', 'a', TTL)).toBeNull()
  })

  test('of many Platforms racing for a free lease, exactly one gets it', async () => {
    const got = await Promise.all(Array.from({ length: 12 }, (_, i) => acquireLease(i % 2 ? a : b, 't2', `h${i}`, 5_000)))
    expect(got.filter((g) => g !== null)).toHaveLength(1)
  })

  test('a paused old holder cannot write after losing the lease: its fenced write is refused and writes nothing', async () => {
    const la = new Leases(a, 'pa', TTL).lease('placement')
    const lb = new Leases(b, 'pb', TTL).lease('placement')
    const ownerA = (la as unknown as { owner: Leases }).owner
    const ownerB = (lb as unknown as { owner: Leases }).owner
    await ownerA.tryAll()
    expect(la.held).toBe(true)
    await la.fenced((t) => t.run('INSERT INTO fenced_writes (id, by) VALUES (1, ?1)', 'a'))
    // a stops renewing (paused); b takes over once the lease expires by the database's clock
    await waitFor(async () => (await ownerB.tryAll(), lb.held), { timeoutMs: 5_000, intervalMs: 50, what: 'b takes placement' })
    expect(lb.fence).toBe(la.fence + 1)
    // a wakes up still believing it holds the lease (its timer never ran): the fence refuses it
    await expect(la.fenced((t) => t.run('INSERT INTO fenced_writes (id, by) VALUES (2, ?1)', 'a'))).rejects.toBeInstanceOf(LeaseLost)
    await lb.fenced((t) => t.run('INSERT INTO fenced_writes (id, by) VALUES (3, ?1)', 'b'))
    expect(await a.all('SELECT id, by FROM fenced_writes ORDER BY id')).toEqual([
      { id: 1, by: 'a' },
      { id: 3, by: 'b' },
    ])
  })

  test('a takeover waits for a fenced write in flight: the old holder commits first or not at all', async () => {
    expect(await acquireLease(a, 't3', 'a', TTL)).not.toBeNull()
    let resume!: () => void
    const paused = new Promise<void>((r) => (resume = r))
    // a passes the fence check, then pauses inside its transaction past the lease's expiry
    const write = a.tx(async (t) => {
      expect(await checkFence(t, 't3', 'a', 1)).toBe(true)
      await paused
      await t.run('INSERT INTO fenced_writes (id, by) VALUES (10, ?1)', 'a')
    })
    await Bun.sleep(TTL + 200)
    // What b's connection sees the moment its takeover returns: a's write must be committed by then.
    // (The order in which the two clients hear back is not the order of the commits, so the store is asked.)
    const takeover = acquireLease(b, 't3', 'b', TTL).then(async (r) => ({ r, seen: await b.all<{ id: number }>('SELECT id FROM fenced_writes WHERE id = 10') }))
    await Bun.sleep(300)
    resume()
    const { r, seen } = await takeover
    await write
    expect(r?.fence).toBe(2)
    expect(seen.map((x) => Number(x.id))).toEqual([10])
  })

  test('a clean stop gives the lease up at once', async () => {
    const la = new Leases(a, 'sa', 60_000)
    la.lease('audit-prune')
    await la.start()
    expect(la.lease('audit-prune').held).toBe(true)
    expect(await acquireLease(b, 'audit-prune', 'sb', 60_000)).toBeNull()
    await la.stop()
    expect((await acquireLease(b, 'audit-prune', 'sb', 60_000))?.fence).toBe(2)
  })
})

describe('leases on sqlite', () => {
  test('one Platform per store: the same code path always holds, even over a lease left by a killed one', async () => {
    using dir = tmpDir()
    const store = await openStore(join(dir.path, 'muster.db'))
    try {
      expect(await acquireLease(store, 'placement', 'before-kill', 60_000, true)).not.toBeNull()
      const leases = new Leases(store, 'after-restart', 60_000)
      const l = leases.lease('placement')
      await leases.tryAll()
      expect(l.held).toBe(true)
      expect(l.fence).toBe(2)
      expect(await l.fenced(async () => 'wrote')).toBe('wrote')
      await leases.stop()
    } finally {
      await store.close()
    }
  })
})
