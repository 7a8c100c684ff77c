// Batched heartbeat writes: the registry flushes every
// second, and with 100,000 nodes at a 10 s interval that is 10,000 rows a
// second. They go to node_heartbeats, one narrow row a node (name, time,
// version, capacity, replicas), not to the node rows, which carry the
// certificate: measured with bun:sqlite on this machine, an update of 10,000
// random rows of 100,000 cost 11.8 µs of CPU a row in whole node rows and
// 3.4 µs in narrow ones, and the longest chunk of 1,000 fell from 44 to 11 ms.
// One INSERT … SELECT … ON CONFLICT per chunk from a JSON array (one statement,
// one round trip on PostgreSQL). A row whose node is gone is skipped (the
// EXISTS), and a node's time never moves back (another Platform on the store
// may have written a newer beat).
import type { Db } from './db.ts'
import type { HeartbeatRow } from './nodes.ts'
import { spanEnd, spanStart } from '../loop-spans.ts'
import { openHeartbeatSink, type HeartbeatSink } from './heartbeat-writer.ts'

// Each chunk commits on its own and the flush gives the event loop back between
// chunks, so heartbeats are not held behind it. A heartbeat row stands alone, so
// nothing needs the chunks to commit together (a failed flush writes them all again next time).
const CHUNK = 500

export const HEARTBEAT_SQLITE = `INSERT INTO node_heartbeats (name, last_seen_at, version, cpu_millis, memory_mb, replicas, platform)
  SELECT j.value ->> 0, j.value ->> 1, j.value ->> 2, j.value ->> 3, j.value ->> 4, j.value ->> 5, ?2
    FROM json_each(?1) AS j WHERE EXISTS (SELECT 1 FROM nodes WHERE nodes.name = j.value ->> 0)
  ON CONFLICT (name) DO UPDATE SET last_seen_at = excluded.last_seen_at, version = excluded.version, cpu_millis = excluded.cpu_millis,
    memory_mb = excluded.memory_mb, replicas = excluded.replicas, platform = excluded.platform WHERE node_heartbeats.last_seen_at < excluded.last_seen_at`
const POSTGRES = `INSERT INTO node_heartbeats (name, last_seen_at, version, cpu_millis, memory_mb, replicas, platform)
  SELECT j ->> 0, (j ->> 1)::bigint, j ->> 2, (j ->> 3)::bigint, (j ->> 4)::bigint, j ->> 5, ?2::text
    FROM jsonb_array_elements(?1::text::jsonb) AS j WHERE EXISTS (SELECT 1 FROM nodes WHERE nodes.name = j ->> 0)
  ON CONFLICT (name) DO UPDATE SET last_seen_at = excluded.last_seen_at, version = excluded.version, cpu_millis = excluded.cpu_millis,
    memory_mb = excluded.memory_mb, replicas = excluded.replicas, platform = excluded.platform WHERE node_heartbeats.last_seen_at < excluded.last_seen_at`

/** One heartbeat as a chunk carries it: name, time, version, CPU millis, memory MB, replicas (JSON). */
export type HeartbeatTuple = [string, number, string | null, number | null, number | null, string | null]

/**
 * Writes many heartbeats, a chunk of rows per statement and transaction, marked as written by `platform`
 * (the others read only what they did not write).
 */
export async function writeHeartbeatBatch(db: Db, beats: HeartbeatRow[], chunk = CHUNK, platform: string | null = null): Promise<void> {
  for (let i = 0; i < beats.length; i += chunk) {
    if (i > 0) await new Promise((r) => setImmediate(r))
    await writeHeartbeatChunk(db, beats.slice(i, i + chunk).map((b) => [b.name, b.last_seen_at, b.version, b.cpu_millis, b.memory_mb, b.replicas]), platform)
  }
}

/**
 * One chunk in one statement and transaction, its rows put in name order first: Platforms sharing a store
 * then lock rows in one order, so two flushes cannot deadlock (each chunk commits before the next starts,
 * so the order within a chunk is all that counts). `rows` is sorted in place.
 */
export async function writeHeartbeatChunk(db: Db, rows: HeartbeatTuple[], platform: string | null, sink?: HeartbeatSink): Promise<void> {
  if (rows.length === 0) return
  // SQLite runs a chunk on the thread that calls it, the whole statement holding that thread; a sink (a worker
  // thread, or PostgreSQL's round trip) leaves the event loop only the chunk's text to make.
  const started = spanStart()
  rows.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))
  const json = JSON.stringify(rows)
  const onLoop = sink === undefined && db.engine !== 'postgres'
  if (!onLoop) spanEnd('heartbeat flush: chunk', started)
  if (sink) await sink.writeChunk(json, platform)
  else await db.tx((t) => t.run(db.engine === 'postgres' ? POSTGRES : HEARTBEAT_SQLITE, json, platform))
  if (onLoop) spanEnd('heartbeat flush: chunk', started)
}

/** Where a registry that flushes on a timer writes its chunks (src/store/heartbeat-writer.ts). */
export function heartbeatSink(store: Db): HeartbeatSink {
  return openHeartbeatSink(store, store.engine === 'postgres' ? POSTGRES : HEARTBEAT_SQLITE)
}

export const HEARTBEAT_CHUNK = CHUNK
