// Batched heartbeat writes (issue 16): the registry flushes every second, and
// with 100,000 nodes at a 10 s interval that is 10,000 rows a second. One
// UPDATE … FROM a JSON array per chunk instead of one statement per row: when
// SQLite ran on Bun.SQL each statement cost a prepare, and per-row writes took a
// tenth of a core at 1,000 rows a second; one statement a chunk is still fewer
// round trips on PostgreSQL. Same rows, same values as writeHeartbeats.
import type { Db } from './db.ts'
import type { HeartbeatRow } from './nodes.ts'

// Each chunk commits on its own and the flush gives the event loop back between
// chunks, so heartbeats are not held behind it: with 100,000 nodes (fleet.ts) one
// transaction for all 10,000 rows a second held the loop for up to 1.5 s, and its
// commit alone for 350–590 ms. A heartbeat row stands alone, so nothing needs the
// chunks to commit together (a failed flush writes them all again next time).
const CHUNK = 1000

const SQLITE = `UPDATE nodes SET last_seen_at = j.value ->> 1, version = j.value ->> 2, cpu_millis = j.value ->> 3, memory_mb = j.value ->> 4, replicas = j.value ->> 5
  FROM json_each(?1) AS j WHERE nodes.name = j.value ->> 0`
const POSTGRES = `UPDATE nodes SET last_seen_at = (j ->> 1)::bigint, version = j ->> 2, cpu_millis = (j ->> 3)::bigint, memory_mb = (j ->> 4)::bigint, replicas = j ->> 5
  FROM jsonb_array_elements(?1::text::jsonb) AS j WHERE nodes.name = j ->> 0`

/** Writes many heartbeats, a chunk of rows per statement and transaction (in name order: Platforms sharing a store lock rows alike). */
export async function writeHeartbeatBatch(db: Db, beats: HeartbeatRow[], chunk = CHUNK): Promise<void> {
  if (beats.length === 0) return
  const sorted = [...beats].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
  const text = db.engine === 'postgres' ? POSTGRES : SQLITE
  for (let i = 0; i < sorted.length; i += chunk) {
    if (i > 0) await new Promise((r) => setImmediate(r))
    const rows = sorted.slice(i, i + chunk).map((b) => [b.name, b.last_seen_at, b.version, b.cpu_millis, b.memory_mb, b.replicas])
    await db.tx((t) => t.run(text, JSON.stringify(rows)))
  }
}
