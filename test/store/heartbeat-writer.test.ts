// The heartbeat flush's writer thread on SQLite (src/store/heartbeat-writer.ts):
// a chunk is written by a connection of its own on another thread, so the event
// loop keeps turning while it runs, and what it wrote is what the Platform's
// connection reads; a writer that cannot start hands over to the store itself;
// a Platform's close ends its writer thread.
import { expect, test } from 'bun:test'
import { readdirSync, statSync } from 'node:fs'
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

test("the writer thread copies the WAL back into the file, and the Platform's connection checkpoints again once it stops", async () => {
  using dir = tmpDir()
  const file = join(dir.path, 'muster.db')
  const store = await openStore(file)
  const autocheckpoint = async () => Number(Object.values((await store.get<Record<string, unknown>>('PRAGMA wal_autocheckpoint'))!)[0])
  try {
    expect(await autocheckpoint()).toBe(10_000)
    const sink = openHeartbeatSink(store, (await import('../../src/store/heartbeats.ts')).HEARTBEAT_SQLITE, 100)
    // Once the thread is up, the Platform's own commits no longer checkpoint (no copy and fsync on the event loop).
    await waitFor(async () => (await autocheckpoint()) === 0, { timeoutMs: 10_000, what: "the store's automatic checkpoints turned off" })
    // 20 MB through the Platform's connection: only a checkpoint puts those pages into the file itself.
    const before = statSync(file).size
    await store.script('CREATE TABLE scratch (b BLOB)')
    await store.tx(async (t) => {
      for (let i = 0; i < 20; i++) await t.run('INSERT INTO scratch (b) VALUES (randomblob(1000000))')
    })
    await waitFor(() => statSync(file).size >= before + 20_000_000, { timeoutMs: 15_000, what: `the WAL checkpointed by the writer thread (the file is ${statSync(file).size} bytes)` })
    await sink.close()
    expect(await autocheckpoint()).toBe(10_000)
  } finally {
    await store.close()
  }
})
