// The batched heartbeat write leaves every row exactly as the row-by-row
// write does, on both engines, across chunk boundaries.
import { describe, expect, test } from 'bun:test'
import { join } from 'node:path'
import { openStore, type Store } from '../../src/store/db.ts'
import { writeHeartbeatBatch } from '../../src/store/heartbeats.ts'
import { insertNode, writeHeartbeats, type HeartbeatRow, type NodeRow } from '../../src/store/nodes.ts'
import { tmpDir } from '../helpers/tmp.ts'
import { ENGINES, freshDatabase } from '../helpers/postgres.ts'

async function fresh(engine: string): Promise<{ store: Store; [Symbol.asyncDispose](): Promise<void> }> {
  if (engine === 'postgres') {
    const db = await freshDatabase({ empty: true })
    const store = await openStore(db.url)
    return { store, [Symbol.asyncDispose]: async () => (await store.close(), await db.drop()) }
  }
  const dir = tmpDir()
  const store = await openStore(join(dir.path, 'muster.db'))
  return { store, [Symbol.asyncDispose]: async () => (await store.close(), dir[Symbol.dispose]()) }
}

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
    const rows = (s: Store) => s.all<NodeRow>('SELECT * FROM nodes ORDER BY name')
    const [ra, rb] = [await rows(a.store), await rows(b.store)]
    expect(rb).toEqual(ra)
    expect(rb.filter((r) => r.last_seen_at !== null)).toHaveLength(count / 2)
    expect(rb.find((r) => r.name === 'n893')).toMatchObject({ last_seen_at: 1_760_000_000_000 + 893, version: '0.1.893', cpu_millis: 893_000, memory_mb: 2 ** 40 + 893 })
  })
})
