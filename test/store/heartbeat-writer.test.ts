// The heartbeat flush's writer thread on SQLite (src/store/heartbeat-writer.ts):
// a chunk is written by a connection of its own on another thread, so the event
// loop keeps turning while it runs, and what it wrote is what the Platform's
// connection reads; a writer that cannot start hands over to the store itself;
// a Platform's close ends its writer thread.
import { expect, test } from 'bun:test'
import { readdirSync } from 'node:fs'
import { join } from 'node:path'
import { openStore } from '../../src/store/db.ts'
import { openHeartbeatSink } from '../../src/store/heartbeat-writer.ts'
import { heartbeatSink } from '../../src/store/heartbeats.ts'
import { insertNode } from '../../src/store/nodes.ts'
import { startPlatform } from '../helpers/platform.ts'
import { tmpDir, waitFor } from '../helpers/tmp.ts'

test('on a SQLite file a chunk is written on another thread: the event loop turns meanwhile, and the rows are there', async () => {
  using dir = tmpDir()
  const store = await openStore(join(dir.path, 'muster.db'))
  try {
    const count = 40_000
    await store.tx(async (t) => {
      for (let i = 0; i < count; i++) await insertNode(t, { name: `w${i}`, auth: 'enrolled', cert_sha256: `c${i}`, cert_pem: null, url: null, token_id: null, version: null, enrolled_at: 1 })
    })
    const sink = heartbeatSink(store)
    const rows = Array.from({ length: count }, (_, i) => [`w${i}`, 1_760_000_000_000 + i, '0.1.0', 1000, 512, '[]'])
    let turns = 0
    const timer = setInterval(() => turns++, 1)
    const started = performance.now()
    await sink.writeChunk(JSON.stringify(rows), 'p1')
    const took = performance.now() - started
    clearInterval(timer)
    await sink.close()
    // A statement on this thread would have held the loop for all of it: the timer could not have run.
    expect(took).toBeGreaterThan(20)
    expect(turns).toBeGreaterThanOrEqual(3)
    const written = await store.get<{ n: number; newest: number }>('SELECT count(*) AS n, max(last_seen_at) AS newest FROM node_heartbeats WHERE platform = ?1', 'p1')
    expect(Number(written!.n)).toBe(count)
    expect(Number(written!.newest)).toBe(1_760_000_000_000 + count - 1)
  } finally {
    await store.close()
  }
})

test('a writer thread that cannot open its file hands the chunks to the store itself', async () => {
  using dir = tmpDir()
  const store = await openStore(join(dir.path, 'muster.db'))
  try {
    await insertNode(store, { name: 'w1', auth: 'enrolled', cert_sha256: 'c1', cert_pem: null, url: null, token_id: null, version: null, enrolled_at: 1 })
    // A store whose file the thread cannot open (it is not there): the chunk still lands, through the store.
    const sink = openHeartbeatSink(Object.assign(Object.create(store), { file: join(dir.path, 'missing', 'muster.db') }), (await import('../../src/store/heartbeats.ts')).HEARTBEAT_SQLITE)
    await sink.writeChunk(JSON.stringify([['w1', 5, null, null, null, '[]']]), null)
    await sink.close()
    expect(Number((await store.get<{ t: number }>("SELECT last_seen_at AS t FROM node_heartbeats WHERE name = 'w1'"))!.t)).toBe(5)
  } finally {
    await store.close()
  }
})

test("a Platform's close ends its writer thread: Platforms started and closed one after another leave no thread behind", async () => {
  const threads = () => readdirSync('/proc/self/task').length
  const cycle = async () => {
    await using p = await startPlatform({ remoteDispatch: true, engine: 'sqlite' })
    await p.platform.fabric.registry.flush() // the writer thread is up and has answered
  }
  await cycle() // the first start makes the threads every later one shares (Bun's pools)
  const before = await waitFor(() => threads(), { what: 'a thread count' })
  for (let i = 0; i < 3; i++) await cycle()
  // Each Platform ran a writer thread of its own; the close ended it (a thread ends a little after its close).
  await waitFor(() => threads() <= before, { timeoutMs: 10_000, what: `at most ${before} threads after three Platforms closed (${threads()} now)` })
})
