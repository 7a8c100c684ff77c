// The batched heartbeat write leaves every row exactly as the row-by-row
// write does, on both engines, across chunk boundaries; heartbeats live in
// node_heartbeats and a node reads with its own (src/store/nodes.ts).
import { describe, expect, test } from 'bun:test'
import { join } from 'node:path'
import { openStore, type Store } from '../../src/store/db.ts'
import { writeHeartbeatBatch } from '../../src/store/heartbeats.ts'
import { allNodes, insertNode, writeHeartbeats, type HeartbeatRow } from '../../src/store/nodes.ts'
import { tmpDir } from '../helpers/tmp.ts'
import { ENGINES, freshDatabase, freshStore } from '../helpers/postgres.ts'

const fresh = freshStore

describe.each(ENGINES)('on %s', (engine) => {
  test('a batch of heartbeats writes what one statement per row writes', async () => {
    await using a = await fresh(engine)
    await using b = await fresh(engine)
    const count = 900
    for (const s of [a.store, b.store]) {
      await s.tx(async (t) => {
        for (let i = 0; i < count; i++) await insertNode(t, { name: `n${i}`, auth: 'enrolled', cert_sha256: `c${i}`, cert_pem: null, url: null, token_id: null, version: null, enrolled_at: 1 })
      })
    }
    const beats: HeartbeatRow[] = []
    for (let i = count - 1; i >= 0; i -= 2) {
      beats.push({
        name: `n${i}`,
        last_seen_at: 1_760_000_000_000 + i,
        version: i % 3 === 0 ? null : `0.1.${i}`,
        cpu_millis: i % 5 === 0 ? null : i * 1000,
        memory_mb: i % 7 === 0 ? null : 2 ** 40 + i,
        replicas: i % 4 === 1 ? null : JSON.stringify([{ project: `p"\\${i}`, replica: 0, state: 'running', exitCode: null }]),
      })
    }
    beats.push({ name: 'nobody', last_seen_at: 5, version: null, cpu_millis: null, memory_mb: null, replicas: '[]' })
    await writeHeartbeats(a.store, beats)
    await writeHeartbeatBatch(b.store, beats, 200) // three chunks
    const rows = (s: Store) => allNodes(s)
    const [ra, rb] = [await rows(a.store), await rows(b.store)]
    expect(rb).toEqual(ra)
    expect(rb.filter((r) => r.last_seen_at !== null)).toHaveLength(count / 2)
    expect(rb.find((r) => r.name === 'n893')).toMatchObject({ last_seen_at: 1_760_000_000_000 + 893, version: '0.1.893', cpu_millis: 893_000, memory_mb: 2 ** 40 + 893 })
  })
})

describe.each(ENGINES)('migration 150 on %s', (engine) => {
  test('a store from before the heartbeat table keeps every node\'s last heartbeat, and a node reads it from the new table after', async () => {
    const { MIGRATIONS } = await import('../../src/store/migrations.ts')
    const { migrate } = await import('../../src/store/db.ts')
    const { getNode } = await import('../../src/store/nodes.ts')
    const before = MIGRATIONS.filter((m) => m.id < 150)
    let store: Store
    let cleanup: () => Promise<void>
    if (engine === 'postgres') {
      const db = await freshDatabase({ empty: true })
      store = await openStore(db.url, before)
      cleanup = async () => (await store.close(), await db.drop())
    } else {
      const dir = tmpDir()
      store = await openStore(join(dir.path, 'muster.db'), before)
      cleanup = async () => (await store.close(), dir[Symbol.dispose]())
    }
    try {
      await insertNode(store, { name: 'seen', auth: 'enrolled', cert_sha256: 'c1', cert_pem: null, url: null, token_id: null, version: '0.1.0', enrolled_at: 1 })
      await insertNode(store, { name: 'never', auth: 'enrolled', cert_sha256: 'c2', cert_pem: null, url: null, token_id: null, version: '0.1.0', enrolled_at: 1 })
      await store.run("UPDATE nodes SET last_seen_at = 1700000000000, version = '0.1.1', cpu_millis = 2000, memory_mb = 4096, replicas = '[]' WHERE name = 'seen'")
      expect(await migrate(store, MIGRATIONS)).toContain(150)
      expect(await getNode(store, 'seen')).toMatchObject({ last_seen_at: 1_700_000_000_000, version: '0.1.1', cpu_millis: 2000, memory_mb: 4096, replicas: '[]' })
      expect(await getNode(store, 'never')).toMatchObject({ last_seen_at: null, version: '0.1.0' })
      expect(await store.all('SELECT name FROM node_heartbeats')).toEqual([{ name: 'seen' }])
      // A newer beat is written to the heartbeat table and read from there; the node row is left as it was.
      await writeHeartbeatBatch(store, [{ name: 'seen', last_seen_at: 1_700_000_005_000, version: '0.1.2', cpu_millis: 1000, memory_mb: 1, replicas: null }])
      expect(await getNode(store, 'seen')).toMatchObject({ last_seen_at: 1_700_000_005_000, version: '0.1.2' })
      expect(await store.get('SELECT last_seen_at FROM nodes WHERE name = ?1', 'seen')).toEqual({ last_seen_at: 1_700_000_000_000 })
      // An older beat (another Platform's, late) never moves it back; removing the node removes its heartbeat.
      await writeHeartbeatBatch(store, [{ name: 'seen', last_seen_at: 1_700_000_001_000, version: '0.0.9', cpu_millis: 1, memory_mb: 1, replicas: null }])
      expect(await getNode(store, 'seen')).toMatchObject({ last_seen_at: 1_700_000_005_000, version: '0.1.2' })
      await store.run("DELETE FROM nodes WHERE name = 'seen'")
      expect(await store.all('SELECT name FROM node_heartbeats')).toEqual([])
    } finally {
      await cleanup()
    }
  })
})

describe.each(ENGINES)('a rebound name on %s', (engine) => {
  test('starts unseen: the old machine\'s last heartbeat is not the new certificate\'s', async () => {
    const { bindCertificate, getNode, updateNodeFields } = await import('../../src/store/nodes.ts')
    await using s = await fresh(engine)
    await insertNode(s.store, { name: 'w1', auth: 'enrolled', cert_sha256: 'old', cert_pem: null, url: null, token_id: null, version: '0.1.0', enrolled_at: 1 })
    await writeHeartbeatBatch(s.store, [{ name: 'w1', last_seen_at: 1_700_000_000_000, version: '0.1.0', cpu_millis: 1, memory_mb: 1, replicas: '[]' }])
    expect((await getNode(s.store, 'w1'))?.last_seen_at).toBe(1_700_000_000_000)
    // rebind clears the certificate; the next enrollment binds a new one
    await updateNodeFields(s.store, 'w1', { cert_sha256: null, cert_pem: null })
    expect(await bindCertificate(s.store, 'w1', { cert_sha256: 'new', cert_pem: null, url: null, token_id: null, version: '0.1.1' }, 2)).toBe(true)
    expect(await getNode(s.store, 'w1')).toMatchObject({ cert_sha256: 'new', last_seen_at: null, version: '0.1.1' })
  })
})
