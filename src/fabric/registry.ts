// The node registry: every node in memory (the hot path reads only memory),
// structural changes written through at once, heartbeats batched to disk.
import type { Db } from '../store/db.ts'
import { getNode, updateNodeFields, type NodeRow } from '../store/nodes.ts'
import { HEARTBEAT_CHUNK, heartbeatSink, writeHeartbeatChunk, type HeartbeatTuple } from '../store/heartbeats.ts'
import type { HeartbeatSink } from '../store/heartbeat-writer.ts'
import { nodeCount, registryRows } from '../store/registry-rows.ts'
import { log } from '../log.ts'
import { spanEnd, spanStart } from '../loop-spans.ts'
import { compareVersions, isVersion, VERSION } from '../version.ts'
import { NodeTable, orNull } from './node-table.ts'
import { NameOrder } from './node-names.ts'
import { NodeEntry, NodeViews } from './node-entry.ts'
import { fromRow, NO_REPLICAS, type NodeFields } from './node-fields.ts'
import { pullHeartbeats } from './heartbeat-pull.ts'
import type { NodeStateName, ReplicaStatus, StateCounts } from '../wire/nodes.ts'
import { indexFrom } from '../wire/paging.ts'
import { CensusCount } from './census.ts'

export type Compatibility = 'current' | 'behind' | 'newer' | 'unknown'
export { NodeEntry } from './node-entry.ts'
export { fromRow, replicasFromJson } from './node-fields.ts'
export type { NodeFields, Probe } from './node-fields.ts'

export function compatibilityOf(version: string | null): Compatibility {
  if (!version || !isVersion(version)) return 'unknown'
  const order = compareVersions(version, VERSION)
  // A node newer than the Platform is not current (docs/nodes.md); enroll refuses it outright (worker-newer).
  return order < 0 ? 'behind' : order > 0 ? 'newer' : 'current'
}

/** From this many nodes on, listings count states from a cache (Registry.stateCounts). */
const COUNT_CACHE_FROM = 50_000
const COUNT_REFRESH_MS = 2_000
/** A full collection every this many rows loaded (Registry.load). */
const GC_EVERY = 200_000
/** From COUNT_CACHE_FROM nodes on, a full count runs at least this often (a scrape starts none: docs/monitoring.md). */
const CENSUS_REFRESH_MS = 30_000
/**
 * How often the other Platforms' heartbeats are read back (src/fabric/heartbeat-pull.ts): each read covers the
 * time since the last one and 3 s before it, so a read every 3 s reads each row about twice, not four times.
 */
const PULL_EVERY_MS = 3_000
/** Nodes counted between two turns of the event loop (about 2–5 ms). */
const COUNT_SLICE = 10_000

export class Registry {
  readonly table = new NodeTable()
  readonly nodes = new NodeViews(this.table)
  /** The nodes that gave an address (the readiness probes' candidates): a probe round walks these, not the fleet. */
  readonly addressed = new Set<string>()
  /** Slots with a heartbeat not yet written, each once (the table's dirty column says which are here). */
  private dirty: number[] = []
  private timer: ReturnType<typeof setInterval> | undefined
  private flushing: Promise<void> = Promise.resolve()
  /** Newest heartbeat time read from the store (several Platforms: beats taken by the others; src/fabric/heartbeat-pull.ts). */
  syncedTo = 0
  /** A node that another Platform changed (seen by pulling, when its notice was lost). */
  onRemoteChange: (name: string) => void = () => {}
  /** A heartbeat another Platform took that changed liveness, capacity or replicas (placement and probes listen). */
  onRemoteHeartbeat: (n: NodeEntry) => void = () => {}

  private constructor(
    private readonly db: Db,
    private readonly now: () => number,
    /** A node without a heartbeat for this long is unreachable. */
    readonly staleAfterMs: number,
    /** This Platform's id, written with its heartbeats (the other Platforms read only theirs). */
    private readonly origin: string | null,
  ) {}

  static async load(db: Db, now: () => number, staleAfterMs: number, origin: string | null = null): Promise<Registry> {
    const r = new Registry(db, now, staleAfterMs, origin)
    r.table.reserve(await nodeCount(db))
    let loaded = 0
    for await (const rows of registryRows(db)) {
      // The pages read are garbage once loaded, and some live long enough that only a full collection frees
      // them: one every GC_EVERY rows keeps the load's peak memory near what it leaves (measured at a million
      // nodes: peak 830 MB collecting only at the end, against 502 MB left after the load).
      if ((loaded += rows.length) % GC_EVERY < rows.length && loaded >= GC_EVERY) Bun.gc(true)
      for (const row of rows) {
        r.table.add(fromRow(row), row.labels)
        if (row.url) r.addressed.add(row.name)
        r.syncedTo = Math.max(r.syncedTo, row.last_seen_at ?? 0)
      }
    }
    // A fleet-size registry counts its nodes by state and puts their names in order now, before it serves:
    // the first listing finds both (each holds the event loop ~100 ms at a million nodes).
    if (r.table.size >= COUNT_CACHE_FROM) {
      r.stateCounts()
      r.sortedNames()
      Bun.gc(true) // the last pages' garbage, before serving
    }
    return r
  }

  /**
   * Writes batched heartbeats every `intervalMs` (and, on a shared store, reads the other Platforms'); on a
   * SQLite file through a thread of its own (src/store/heartbeat-writer.ts).
   */
  startFlushing(intervalMs = 1000): void {
    this.sink ??= heartbeatSink(this.db)
    this.timer = setInterval(() => {
      void this.flush().catch((e) => log.warn(`writing heartbeats: ${(e as Error).message}`))
      // One read at a time (a read yields between its pages and may outlast the interval), every PULL_EVERY_MS.
      if (this.db.engine === 'postgres' && this.pulling === null && performance.now() - this.pulledAt >= PULL_EVERY_MS) {
        this.pulledAt = performance.now()
        this.pulling = pullHeartbeats(this.db, this.origin, this)
          .catch((e) => log.warn(`reading heartbeats: ${(e as Error).message}`))
          .finally(() => (this.pulling = null))
      }
      if (this.table.size >= COUNT_CACHE_FROM) this.stateCounts(CENSUS_REFRESH_MS) // the metrics' counts: a full pass every 30 s
    }, intervalMs)
    this.timer.unref?.()
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer)
    await this.pulling // a read under way ends before the store closes
    try {
      await this.flush()
    } finally {
      const sink = this.sink
      this.sink = undefined
      await sink?.close()
    }
  }
  private sink: HeartbeatSink | undefined
  private pulling: Promise<void> | null = null
  private pulledAt = -Infinity

  /** Writes the heartbeats taken since the last flush in one transaction; flushes never overlap. */
  flush(): Promise<void> {
    const run = this.flushing.then(() => this.writeDirty())
    this.flushing = run.catch(() => {})
    return run
  }

  /**
   * The nodes heard from since the last flush, a chunk at a time: each chunk's rows are read from the
   * columns (their newest beat) and written in one statement, and the event loop gets a turn between
   * chunks, so a flush of 16,700 beats (a million nodes at 60 s) never holds it for more than one chunk.
   */
  private async writeDirty(): Promise<void> {
    if (this.dirty.length === 0) return
    const slots = this.dirty
    this.dirty = []
    const t = this.table
    const chunk = this.sink?.chunk ?? HEARTBEAT_CHUNK
    for (let i = 0; i < slots.length; i += chunk) {
      if (i > 0) await new Promise((r) => setImmediate(r))
      const started = spanStart()
      const rows: HeartbeatTuple[] = []
      for (let j = i; j < slots.length && j < i + chunk; j++) {
        const s = slots[j]!
        t.dirty[s] = 0 // a beat from here on is the next flush's
        // A slot whose name left or was rebound since is not written: the name's new slot has its own beats.
        if (!t.isLive(s) || Number.isNaN(t.lastSeenAt[s]!)) continue
        const replicas = t.replicas[s]
        rows.push([t.nameOf(s), t.lastSeenAt[s]!, t.stringAt(t.version[s]!), orNull(t.cpuMillis[s]!), orNull(t.memoryMB[s]!), replicas === undefined ? '[]' : JSON.stringify(replicas)])
      }
      spanEnd('heartbeat flush: collect', started)
      try {
        await writeHeartbeatChunk(this.db, rows, this.origin, this.sink)
      } catch (e) {
        // kept for the next flush
        for (let j = i; j < slots.length; j++) this.markDirty(slots[j]!)
        throw e
      }
    }
  }

  private markDirty(s: number): void {
    if (this.table.dirty[s] === 1) return
    this.table.dirty[s] = 1
    this.dirty.push(s)
  }

  get(name: string): NodeEntry | undefined {
    const s = this.table.slotOf(name)
    return s < 0 ? undefined : new NodeEntry(this.table, s, name)
  }

  /** Node names in code-unit order (listings page through it); made once, then kept as nodes come and go. */
  sortedNames(): NameOrder {
    if (this.sorted === null) {
      const started = spanStart()
      const t = this.table
      const slots = [...t.liveSlots()]
      // The store hands the rows over in name order (SQLite's, which is this order for node names): a look
      // is enough, not a sort (sorting a million names held the event loop 1–2 s).
      let inOrder = true
      for (let i = 1; i < slots.length && inOrder; i++) inOrder = t.names.compare(slots[i - 1]!, slots[i]!) < 0
      if (!inOrder) slots.sort((a, b) => t.names.compare(a, b))
      this.sorted = new NameOrder(t.names, slots)
      spanEnd('names in order', started)
    }
    return this.sorted
  }
  private sorted: NameOrder | null = null

  /** A name came or went: the sorted list (when made) takes it in or out where it belongs, without a new sort. */
  private placeName(name: string, present: boolean): void {
    const order = this.sorted
    if (order === null) return
    const lo = indexFrom(order, name)
    const here = lo < order.length && order.at(lo) === name
    if (present && !here) order.slots.splice(lo, 0, this.table.slotOf(name))
    else if (!present && here) order.slots.splice(lo, 1)
  }

  /**
   * Nodes by state over the whole registry, for listings. Below COUNT_CACHE_FROM nodes they are counted
   * on every call. Above, counting takes 100–400 ms for a million nodes, so the registry keeps them from
   * its load on: a node that comes, goes, is changed or comes back to life moves its own count at once,
   * and a listing that finds the last full count older than COUNT_REFRESH_MS starts another in slices that
   * give the event loop back (a node that falls silent turns unreachable by time alone: counted then).
   */
  stateCounts(refreshAfterMs = COUNT_REFRESH_MS): StateCounts {
    if (this.table.size < COUNT_CACHE_FROM) return this.countNow()
    const now = this.now()
    if (this.counts === null) {
      this.counts = this.countNow()
      this.countedAt = now
    } else if (!this.counting && (now - this.countedAt >= refreshAfterMs || now < this.countedAt)) void this.countInSlices()
    return { ...this.counts }
  }
  private counts: StateCounts | null = null
  readonly census = new CensusCount(compatibilityOf, () => this.stateCounts(Infinity)) // the metrics' (src/fabric/census.ts)
  private countedAt = 0
  private counting = false
  /** Moves one node's count from the state it was in to the one it is in (null: absent). */
  private moveCount(from: NodeStateName | null, to: NodeStateName | null): void {
    const c = this.counts
    if (c === null || from === to) return
    if (from === null) c.total++
    else c[from]--
    if (to === null) c.total--
    else c[to]++
  }

  private countNow(): StateCounts {
    const started = spanStart()
    const census = this.census.start()
    const t = this.table
    const now = this.now()
    for (const s of t.liveSlots()) this.census.add(census, t.stringAt(t.version[s]!), orNull(t.lastSeenAt[s]!), this.slotState(s, now), now)
    spanEnd('state counts: all', started)
    return (this.census.last = census).states
  }

  private async countInSlices(): Promise<void> {
    this.counting = true
    const at = this.now()
    try {
      const census = this.census.start()
      let i = 0
      const t = this.table
      let started = spanStart()
      let now = at // each slice's states as of its start
      for (const s of t.liveSlots()) {
        this.census.add(census, t.stringAt(t.version[s]!), orNull(t.lastSeenAt[s]!), this.slotState(s, now), at)
        if (++i % COUNT_SLICE === 0) {
          spanEnd('state counts: slice', started)
          await new Promise((r) => setImmediate(r))
          started = spanStart()
          now = this.now()
        }
      }
      spanEnd('state counts: slice', started)
      // Moves made meanwhile are in the old count, and the new one saw most of them: it wins (a node's count
      // is off at most until the next one).
      this.counts = (this.census.last = census).states
      this.countedAt = at
    } finally {
      this.counting = false
    }
  }

  /**
   * Sets one node from a store row (null: it is gone). The same machine (its certificate) is written in place;
   * a new one (a rebind, or a name that comes back) takes a new slot, so views of the old one read the old.
   */
  reload(row: NodeRow | null, name: string): void {
    const t = this.table
    const had = t.slotOf(name)
    const before = had >= 0 && this.counts ? this.slotState(had, this.now()) : null
    if (row) {
      const fresh = fromRow(row)
      // What this Platform holds of the same machine (its certificate): a heartbeat not flushed yet is newer
      // than the row, and the last probe stands. A name rebound to a new certificate starts unseen and unprobed.
      const same = had >= 0 && t.certIs(had, fresh.certSha256)
      if (same) {
        const old = new NodeEntry(t, had)
        const seen = old.lastSeenAt
        if (seen && (fresh.lastSeenAt ?? 0) < seen) Object.assign(fresh, { lastSeenAt: seen, version: old.version, cpuMillis: old.cpuMillis, memoryMB: old.memoryMB, replicas: old.replicas })
        const probe = old.probe
        if (probe) fresh.probe = probe
      }
      const s = same ? had : t.add(fresh, row.labels)
      if (had < 0) this.placeName(name, true)
      if (same) t.write(s, fresh, row.labels)
      if (fresh.url) this.addressed.add(name)
      else this.addressed.delete(name)
      if (this.counts) this.moveCount(before, this.slotState(s, this.now()))
    } else if (t.remove(name)) {
      this.addressed.delete(name)
      this.placeName(name, false)
      this.moveCount(before, null)
    }
  }

  /** Reads one node again from the store (another Platform may have changed it). */
  async refresh(name: string): Promise<NodeEntry | undefined> {
    this.reload(await getNode(this.db, name), name)
    return this.get(name)
  }

  /** Writes fields through to the store and memory at once. */
  async update(name: string, fields: Partial<Omit<NodeRow, 'name'>>): Promise<void> {
    await updateNodeFields(this.db, name, fields)
    await this.refresh(name)
  }
  /** Records a heartbeat in memory; true when it changed what placement sees (liveness, capacity, replicas). */
  heartbeat(n: NodeEntry, beat: { readonly version?: string; readonly capacity?: { readonly cpuMillis: number; readonly memoryMB: number }; readonly replicas?: readonly ReplicaStatus[] }, now = this.now()): boolean {
    const t = n.table
    const s = n.slot
    const seen = t.lastSeenAt[s]!
    let changed = Number.isNaN(seen) || now - seen > this.staleAfterMs
    // Back to life (or first seen): its count moves, when counts are kept.
    const before = changed && this.counts ? this.slotState(s, now) : null
    t.lastSeenAt[s] = now
    if (beat.version !== undefined && beat.version !== t.stringAt(t.version[s]!)) n.version = beat.version
    const capacity = beat.capacity
    if (capacity !== undefined && capacity.cpuMillis !== t.cpuMillis[s]) {
      t.cpuMillis[s] = capacity.cpuMillis
      changed = true
    }
    if (capacity !== undefined && capacity.memoryMB !== t.memoryMB[s]) {
      t.memoryMB[s] = capacity.memoryMB
      changed = true
    }
    const had = t.replicas[s]
    if (beat.replicas !== undefined && (beat.replicas.length > 0 || had !== undefined) && JSON.stringify(beat.replicas) !== JSON.stringify(had ?? NO_REPLICAS)) {
      t.replicas[s] = beat.replicas.length === 0 ? undefined : (beat.replicas as ReplicaStatus[])
      changed = true
    }
    this.markDirty(s)
    if (before !== null) this.moveCount(before, this.slotState(s, now))
    return changed
  }

  /** Ready, or heartbeating within the stale window, with a credential that still works (docs/nodes.md). */
  healthy(n: NodeFields): boolean {
    if (n.revokedAt !== null || (n.auth === 'enrolled' && n.certSha256 === null)) return false
    return n.lastSeenAt !== null && this.now() - n.lastSeenAt <= this.staleAfterMs
  }

  /** `now`: the clock's reading, when the caller has one (the heartbeat reads it once). */
  state(n: NodeFields, now = this.now()): { readonly state: NodeStateName; readonly reason?: string } {
    // The common answer from the columns, without the view's getters (every heartbeat asks).
    if (n instanceof NodeEntry && this.slotState(n.slot, now) === 'ready') return READY
    if (n.revokedAt !== null) return { state: 'revoked' }
    if (n.lastSeenAt === null) return { state: 'enrolled', reason: 'no heartbeat yet' }
    if (this.now() - n.lastSeenAt > this.staleAfterMs) return { state: 'unreachable', reason: `no heartbeat for ${Math.round((this.now() - n.lastSeenAt) / 1000)}s` }
    if (n.url) {
      // Heartbeating, not probed yet: still coming up, not unreachable (docs/operations.md).
      if (!n.probe) return { state: 'enrolled', reason: 'health probe pending' }
      if (!n.probe.ok) return { state: 'unreachable', reason: n.probe.reason ?? 'health probe failed' }
    }
    return READY
  }

  /** state(n).state of a slot, read from the columns (counting a million makes no view and no reason text). */
  private slotState(s: number, now: number): NodeStateName {
    const t = this.table
    if (!Number.isNaN(t.revokedAt[s]!)) return 'revoked'
    const seen = t.lastSeenAt[s]!
    if (Number.isNaN(seen)) return 'enrolled'
    if (now - seen > this.staleAfterMs) return 'unreachable'
    if (t.urls[s] !== undefined) {
      if (Number.isNaN(t.probeAt[s]!)) return 'enrolled'
      if (!t.probeOkAt(s)) return 'unreachable'
    }
    return 'ready'
  }
}

/** One object for the common answer (state runs on every heartbeat and for every node listed). */
const READY: { readonly state: 'ready' } = Object.freeze({ state: 'ready' })
