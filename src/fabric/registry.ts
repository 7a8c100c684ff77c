// The node registry: every node in memory (the hot path reads only memory),
// structural changes written through at once, heartbeats batched to disk.
import type { Db } from '../store/db.ts'
import { getNode, heartbeatsSince, updateNodeFields, type HeartbeatRow, type NodeRow } from '../store/nodes.ts'
import { writeHeartbeatBatch } from '../store/heartbeats.ts'
import { registryRows } from '../store/registry-rows.ts'
import { log } from '../log.ts'
import { spanEnd, spanStart } from '../loop-spans.ts'
import { compareVersions, isVersion, VERSION } from '../version.ts'
import { labelsFromJson, type Labels } from '../wire/labels.ts'
import type { NodeStateName, ReplicaStatus, StateCounts } from '../wire/nodes.ts'
import { indexFrom } from '../wire/paging.ts'

export type Compatibility = 'current' | 'behind' | 'newer' | 'unknown'

export interface NodeEntry {
  name: string
  auth: 'enrolled' | 'legacy'
  certSha256: string | null
  url: string | null
  tokenId: string | null
  generation: number
  previousValidUntil: number
  version: string | null
  enrolledAt: number
  lastSeenAt: number | null
  cpuMillis: number | null
  memoryMB: number | null
  replicas: ReplicaStatus[]
  drained: boolean
  revokedAt: number | null
  /** Labels the node reported at enroll (the nodes file may override them: Fabric.nodeSettings). */
  labels: Labels
  /** The last readiness probe (nodes that gave an address). */
  probe?: { ok: boolean; at: number; reason?: string }
  /**
   * The mac the current credential carries, once the heartbeat's fast check computed it
   * (src/fabric/heartbeat.ts), with the generation and certificate it was computed for:
   * fields of the entry rather than a side table, which cost ~100 bytes a node more.
   */
  mac: string | null
  macGeneration: number
  macCert: string | null
}

// A million nodes are a million entries: what most of them hold alike is one
// value, not one each. The empty replica list and label set are shared and frozen (nothing
// changes them in place: a heartbeat replaces the list), and the few distinct token ids,
// versions and label texts are kept once (`same`).
const NO_REPLICAS: ReplicaStatus[] = Object.freeze([]) as unknown as ReplicaStatus[]
const NO_LABELS: Labels = Object.freeze({}) as Labels
const kept = new Map<string, string>()
const keptLabels = new Map<string, Labels>()
const MAX_KEPT = 10_000

/** One instance of a string many entries hold (a token id, a version); past MAX_KEPT distinct ones, the string itself. */
function same(s: string | null): string | null {
  if (s === null) return null
  const k = kept.get(s)
  if (k !== undefined) return k
  if (kept.size < MAX_KEPT) kept.set(s, s)
  return s
}

function labelsOf(text: string | null): Labels {
  if (!text) return NO_LABELS
  const k = keptLabels.get(text)
  if (k !== undefined) return k
  const labels = Object.freeze(labelsFromJson(text))
  if (keptLabels.size < MAX_KEPT) keptLabels.set(text, labels)
  return labels
}

export function replicasFromJson(text: string | null): ReplicaStatus[] {
  if (!text || text === '[]') return NO_REPLICAS
  try {
    return JSON.parse(text) as ReplicaStatus[]
  } catch {
    return NO_REPLICAS
  }
}

export function fromRow(r: NodeRow): NodeEntry {
  return {
    name: r.name,
    auth: r.auth === 'legacy' ? 'legacy' : 'enrolled',
    certSha256: r.cert_sha256,
    url: r.url,
    tokenId: same(r.token_id),
    generation: r.generation,
    previousValidUntil: r.previous_valid_until,
    version: same(r.version),
    enrolledAt: r.enrolled_at,
    lastSeenAt: r.last_seen_at,
    cpuMillis: r.cpu_millis,
    memoryMB: r.memory_mb,
    replicas: replicasFromJson(r.replicas),
    drained: r.drained === 1,
    revokedAt: r.revoked_at,
    labels: labelsOf(r.labels),
    mac: null,
    macGeneration: 0,
    macCert: null,
  }
}

export function compatibilityOf(version: string | null): Compatibility {
  if (!version || !isVersion(version)) return 'unknown'
  const order = compareVersions(version, VERSION)
  // A node newer than the Platform is not current (docs/nodes.md); enroll refuses it outright (worker-newer).
  return order < 0 ? 'behind' : order > 0 ? 'newer' : 'current'
}

/** How far back each read of the other Platforms' heartbeats starts before the newest one read. */
const PULL_OVERLAP_MS = 3_000

/** From this many nodes on, listings count states from a cache (Registry.stateCounts). */
const COUNT_CACHE_FROM = 50_000
const COUNT_REFRESH_MS = 2_000
/** Nodes counted between two turns of the event loop (about 2–5 ms). */
const COUNT_SLICE = 10_000

export class Registry {
  readonly nodes = new Map<string, NodeEntry>()
  private readonly dirty = new Set<string>()
  private timer: ReturnType<typeof setInterval> | undefined
  private flushing: Promise<void> = Promise.resolve()
  /** Newest heartbeat time read from the store (several Platforms: beats taken by the others). */
  private syncedTo = 0
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
    for await (const rows of registryRows(db)) {
      for (const row of rows) {
        r.nodes.set(row.name, fromRow(row))
        r.syncedTo = Math.max(r.syncedTo, row.last_seen_at ?? 0)
      }
    }
    // A fleet-size registry counts its nodes by state now, before it serves: the first listing finds them.
    if (r.nodes.size >= COUNT_CACHE_FROM) r.stateCounts()
    return r
  }

  /** Writes batched heartbeats every `intervalMs` (and, on a shared store, reads the other Platforms'). */
  startFlushing(intervalMs = 1000): void {
    this.timer = setInterval(() => {
      void this.flush().catch((e) => log.warn(`writing heartbeats: ${(e as Error).message}`))
      if (this.db.engine === 'postgres') void this.pullHeartbeats().catch((e) => log.warn(`reading heartbeats: ${(e as Error).message}`))
    }, intervalMs)
    this.timer.unref?.()
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer)
    await this.flush()
  }

  /** Writes the heartbeats taken since the last flush in one transaction; flushes never overlap. */
  flush(): Promise<void> {
    const run = this.flushing.then(() => this.writeDirty())
    this.flushing = run.catch(() => {})
    return run
  }

  private async writeDirty(): Promise<void> {
    if (this.dirty.size === 0) return
    const started = spanStart()
    const beats: HeartbeatRow[] = []
    for (const name of this.dirty) {
      const n = this.nodes.get(name)
      if (!n || n.lastSeenAt === null) continue
      beats.push({ name, last_seen_at: n.lastSeenAt, version: n.version, cpu_millis: n.cpuMillis, memory_mb: n.memoryMB, replicas: JSON.stringify(n.replicas) })
    }
    this.dirty.clear()
    spanEnd('heartbeat flush: collect', started)
    try {
      await writeHeartbeatBatch(this.db, beats, undefined, this.origin)
    } catch (e) {
      for (const b of beats) this.dirty.add(b.name) // kept for the next flush
      throw e
    }
  }

  /**
   * Heartbeats other Platforms took (nodes fail over between them): liveness for placement here. Each
   * second, what they wrote since the newest beat read, less 3 s for their flushes still committing
   * (a beat missed here is only a beat late: liveness spans the stale window).
   */
  private async pullHeartbeats(): Promise<void> {
    const since = this.syncedTo - PULL_OVERLAP_MS
    const rows = await heartbeatsSince(this.db, since, this.origin)
    let started = spanStart()
    for (const row of rows) {
      this.syncedTo = Math.max(this.syncedTo, row.last_seen_at)
      const n = this.nodes.get(row.name)
      // New here, or revoked, rotated, drained or rebound elsewhere and the notice did not arrive.
      if (!n || n.generation !== row.generation || n.revokedAt !== row.revoked_at || n.drained !== (row.drained === 1) || n.certSha256 !== row.cert_sha256) {
        spanEnd('heartbeat pull', started)
        await this.refresh(row.name)
        started = spanStart()
        if (n) this.onRemoteChange(row.name)
        continue
      }
      if (n.lastSeenAt !== null && n.lastSeenAt >= row.last_seen_at) continue
      const changed = n.lastSeenAt === null || row.last_seen_at - n.lastSeenAt > this.staleAfterMs || n.cpuMillis !== row.cpu_millis || n.memoryMB !== row.memory_mb || JSON.stringify(n.replicas) !== (row.replicas ?? '[]')
      n.lastSeenAt = row.last_seen_at
      n.version = row.version
      n.cpuMillis = row.cpu_millis
      n.memoryMB = row.memory_mb
      n.replicas = replicasFromJson(row.replicas)
      if (changed) this.onRemoteHeartbeat(n)
    }
    spanEnd('heartbeat pull', started)
  }

  get(name: string): NodeEntry | undefined {
    return this.nodes.get(name)
  }

  /** Node names in code-unit order (listings page through it); made again after a node comes or goes. */
  sortedNames(): readonly string[] {
    if (this.sorted === null) {
      const started = spanStart()
      const names = [...this.nodes.keys()]
      // The store hands the rows over in name order (SQLite's, which is this order for node names): a look
      // is enough, not a sort (sorting a million names held the event loop 1–2 s).
      let inOrder = true
      for (let i = 1; i < names.length && inOrder; i++) inOrder = names[i - 1]! < names[i]!
      this.sorted = inOrder ? names : names.sort()
      spanEnd('names in order', started)
    }
    return this.sorted
  }
  private sorted: string[] | null = null

  /** A name came or went: the sorted list (when made) takes it in or out where it belongs, without a new sort. */
  private placeName(name: string, present: boolean): void {
    const s = this.sorted
    if (s === null) return
    const lo = indexFrom(s, name)
    if (present && s[lo] !== name) s.splice(lo, 0, name)
    else if (!present && s[lo] === name) s.splice(lo, 1)
  }

  /**
   * Nodes by state over the whole registry, for listings. Below COUNT_CACHE_FROM nodes they are counted
   * on every call. Above, counting takes 100–400 ms for a million nodes, so the registry keeps them from
   * its load on: a node that comes, goes, is changed or comes back to life moves its own count at once,
   * and a listing that finds the last full count older than COUNT_REFRESH_MS starts another in slices that
   * give the event loop back (a node that falls silent turns unreachable by time alone: counted then).
   */
  stateCounts(): StateCounts {
    if (this.nodes.size < COUNT_CACHE_FROM) return this.countNow()
    const now = this.now()
    if (this.counts === null) {
      this.counts = this.countNow()
      this.countedAt = now
    } else if (!this.counting && (now - this.countedAt >= COUNT_REFRESH_MS || now < this.countedAt)) void this.countInSlices()
    return { ...this.counts }
  }
  private counts: StateCounts | null = null
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
    const counts: StateCounts = { total: 0, enrolled: 0, ready: 0, unreachable: 0, revoked: 0 }
    for (const n of this.nodes.values()) {
      counts.total++
      counts[this.state(n).state]++
    }
    spanEnd('state counts: all', started)
    return counts
  }

  private async countInSlices(): Promise<void> {
    this.counting = true
    const at = this.now()
    try {
      const counts: StateCounts = { total: 0, enrolled: 0, ready: 0, unreachable: 0, revoked: 0 }
      let i = 0
      let started = spanStart()
      for (const n of this.nodes.values()) {
        counts.total++
        counts[this.state(n).state]++
        if (++i % COUNT_SLICE === 0) {
          spanEnd('state counts: slice', started)
          await new Promise((r) => setImmediate(r))
          started = spanStart()
        }
      }
      spanEnd('state counts: slice', started)
      // Moves made meanwhile are in the old count, and the new one saw most of them: it wins (a node's count
      // is off at most until the next one).
      this.counts = counts
      this.countedAt = at
    } finally {
      this.counting = false
    }
  }

  /** Sets one node from a store row (null: it is gone). */
  reload(row: NodeRow | null, name: string): void {
    const had = this.nodes.get(name)
    const before = had && this.counts ? this.state(had).state : null
    if (row) {
      const fresh = fromRow(row)
      // What this Platform holds of the same machine (its certificate): a heartbeat not flushed yet is newer
      // than the row, and the last probe stands. A name rebound to a new certificate starts unseen and unprobed.
      const same = had !== undefined && had.certSha256 === fresh.certSha256
      if (same && had.lastSeenAt && (fresh.lastSeenAt ?? 0) < had.lastSeenAt) Object.assign(fresh, { lastSeenAt: had.lastSeenAt, version: had.version, cpuMillis: had.cpuMillis, memoryMB: had.memoryMB, replicas: had.replicas })
      if (!had) this.placeName(name, true)
      if (same && had.probe) fresh.probe = had.probe
      this.nodes.set(name, fresh)
      if (this.counts) this.moveCount(before, this.state(fresh).state)
    } else if (this.nodes.delete(name)) {
      this.placeName(name, false)
      this.moveCount(before, null)
    }
  }

  /** Reads one node again from the store (another Platform may have changed it). */
  async refresh(name: string): Promise<NodeEntry | undefined> {
    this.reload(await getNode(this.db, name), name)
    return this.nodes.get(name)
  }

  /** Writes fields through to the store and memory at once. */
  async update(name: string, fields: Partial<Omit<NodeRow, 'name'>>): Promise<void> {
    await updateNodeFields(this.db, name, fields)
    await this.refresh(name)
  }
  /** Records a heartbeat in memory; true when it changed what placement sees (liveness, capacity, replicas). */
  heartbeat(n: NodeEntry, beat: { readonly version?: string; readonly capacity?: { readonly cpuMillis: number; readonly memoryMB: number }; readonly replicas?: readonly ReplicaStatus[] }): boolean {
    const now = this.now()
    let changed = n.lastSeenAt === null || now - n.lastSeenAt > this.staleAfterMs
    // Back to life (or first seen): its count moves, when counts are kept.
    const before = changed && this.counts ? this.state(n).state : null
    n.lastSeenAt = now
    if (beat.version !== undefined && beat.version !== n.version) n.version = same(beat.version)
    const capacity = beat.capacity
    if (capacity !== undefined && capacity.cpuMillis !== n.cpuMillis) {
      n.cpuMillis = capacity.cpuMillis
      changed = true
    }
    if (capacity !== undefined && capacity.memoryMB !== n.memoryMB) {
      n.memoryMB = capacity.memoryMB
      changed = true
    }
    if (beat.replicas !== undefined && (beat.replicas.length > 0 || n.replicas.length > 0) && JSON.stringify(beat.replicas) !== JSON.stringify(n.replicas)) {
      n.replicas = beat.replicas.length === 0 ? NO_REPLICAS : (beat.replicas as ReplicaStatus[])
      changed = true
    }
    this.dirty.add(n.name)
    if (before !== null) this.moveCount(before, this.state(n).state)
    return changed
  }

  /** Ready, or heartbeating within the stale window, with a credential that still works (docs/nodes.md). */
  healthy(n: NodeEntry): boolean {
    if (n.revokedAt !== null || (n.auth === 'enrolled' && n.certSha256 === null)) return false
    return n.lastSeenAt !== null && this.now() - n.lastSeenAt <= this.staleAfterMs
  }

  state(n: NodeEntry): { readonly state: NodeStateName; readonly reason?: string } {
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
}

/** One object for the common answer (state runs on every heartbeat and for every node listed). */
const READY: { readonly state: 'ready' } = Object.freeze({ state: 'ready' })
