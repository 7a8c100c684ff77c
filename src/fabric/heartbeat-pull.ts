// On a shared store (several Platforms), the heartbeats the other Platforms
// took: nodes fail over between them, and placement and probes here need their
// liveness (docs/storage-ha.md).
import type { Db } from '../store/db.ts'
import { heartbeatsPage } from '../store/nodes.ts'
import { spanEnd, spanStart } from '../loop-spans.ts'
import { orNull, type NodeTable } from './node-table.ts'
import { NodeEntry } from './node-entry.ts'
import { NO_REPLICAS, replicasFromJson } from './node-fields.ts'

/** Rows of the other Platforms' heartbeats a statement reads (the event loop gets a turn between two). */
const PULL_SLICE = 2_000
/** How far back each read of the other Platforms' heartbeats starts before the newest one read. */
const PULL_OVERLAP_MS = 3_000

/** What a read of the others' heartbeats reads and writes of the registry (src/fabric/registry.ts). */
export interface PullTarget {
  readonly table: NodeTable
  readonly staleAfterMs: number
  /** Newest heartbeat time read from the store. */
  syncedTo: number
  refresh(name: string): Promise<unknown>
  onRemoteChange(name: string): void
  onRemoteHeartbeat(n: NodeEntry): void
}

/**
 * What the others wrote since the newest beat read, less 3 s for their flushes still committing (a beat
 * missed here is only a beat late: liveness spans the stale window), read PULL_SLICE rows a statement in
 * (time, name) order: the rows are decoded a page at a time, and the event loop gets a turn between pages.
 */
export async function pullHeartbeats(db: Db, origin: string | null, r: PullTarget): Promise<void> {
  const t = r.table
  const since = r.syncedTo - PULL_OVERLAP_MS
  let after: { at: number; name: string } | undefined
  for (;;) {
    const rows = await heartbeatsPage(db, since, origin, PULL_SLICE, after)
    const started = spanStart()
    let held = true
    for (const row of rows) {
      r.syncedTo = Math.max(r.syncedTo, row.last_seen_at)
      const s = t.slotOf(row.name)
      // New here, or revoked, rotated, drained or rebound elsewhere and the notice did not arrive.
      if (s < 0 || t.generation[s] !== row.generation || orNull(t.revokedAt[s]!) !== row.revoked_at || t.isDrained(s) !== (row.drained === 1) || !t.certIs(s, row.cert_sha256)) {
        if (held) spanEnd('heartbeat pull', started)
        held = false
        await r.refresh(row.name)
        if (s >= 0) r.onRemoteChange(row.name)
        continue
      }
      const seen = orNull(t.lastSeenAt[s]!)
      if (seen !== null && seen >= row.last_seen_at) continue
      const changed = seen === null || row.last_seen_at - seen > r.staleAfterMs || orNull(t.cpuMillis[s]!) !== row.cpu_millis || orNull(t.memoryMB[s]!) !== row.memory_mb || JSON.stringify(t.replicas[s] ?? NO_REPLICAS) !== (row.replicas ?? '[]')
      const n = new NodeEntry(t, s, row.name)
      n.lastSeenAt = row.last_seen_at
      n.version = row.version
      n.cpuMillis = row.cpu_millis
      n.memoryMB = row.memory_mb
      n.replicas = replicasFromJson(row.replicas)
      if (changed) r.onRemoteHeartbeat(n)
    }
    if (held) spanEnd('heartbeat pull', started)
    if (rows.length < PULL_SLICE) return
    const last = rows[rows.length - 1]!
    after = { at: last.last_seen_at, name: last.name }
    await new Promise((resolve) => setImmediate(resolve))
  }
}
