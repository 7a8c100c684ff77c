// The node registry: every node in memory (the hot path reads only memory),
// structural changes written through at once, heartbeats batched to disk.
import type { Db } from '../store/db.ts'
import { getNode, heartbeatsSince, updateNodeFields, type HeartbeatRow, type NodeRow } from '../store/nodes.ts'
import { writeHeartbeatBatch } from '../store/heartbeats.ts'
import { registryRows } from '../store/registry-rows.ts'
import { log } from '../log.ts'
import { compareVersions, isVersion, VERSION } from '../version.ts'
import { labelsFromJson, type Labels } from './labels.ts'

export type NodeStateName = 'enrolled' | 'ready' | 'unreachable' | 'revoked'
export type Compatibility = 'current' | 'behind' | 'newer' | 'unknown'

export interface ReplicaStatus {
  project: string
  replica: number
  state: 'pending' | 'running' | 'failed' | 'stopped'
  exitCode?: number | null
  revision?: number
}

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
}

export function fromRow(r: NodeRow): NodeEntry {
  let replicas: ReplicaStatus[] = []
  try {
    replicas = r.replicas ? (JSON.parse(r.replicas) as ReplicaStatus[]) : []
  } catch {}
  return {
    name: r.name,
    auth: r.auth,
    certSha256: r.cert_sha256,
    url: r.url,
    tokenId: r.token_id,
    generation: r.generation,
    previousValidUntil: r.previous_valid_until,
    version: r.version,
    enrolledAt: r.enrolled_at,
    lastSeenAt: r.last_seen_at,
    cpuMillis: r.cpu_millis,
    memoryMB: r.memory_mb,
    replicas,
    drained: r.drained === 1,
    revokedAt: r.revoked_at,
    labels: labelsFromJson(r.labels),
  }
}

export function compatibilityOf(version: string | null): Compatibility {
  if (!version || !isVersion(version)) return 'unknown'
  const order = compareVersions(version, VERSION)
  // A node newer than the Platform is not current (SPEC §16.8); enroll refuses it outright (worker-newer).
  return order < 0 ? 'behind' : order > 0 ? 'newer' : 'current'
}

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
  ) {}

  static async load(db: Db, now: () => number, staleAfterMs: number): Promise<Registry> {
    const r = new Registry(db, now, staleAfterMs)
    for await (const rows of registryRows(db)) {
      for (const row of rows) {
        r.nodes.set(row.name, fromRow(row))
        r.syncedTo = Math.max(r.syncedTo, row.last_seen_at ?? 0)
      }
    }
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
    const beats: HeartbeatRow[] = []
    for (const name of this.dirty) {
      const n = this.nodes.get(name)
      if (!n || n.lastSeenAt === null) continue
      beats.push({ name, last_seen_at: n.lastSeenAt, version: n.version, cpu_millis: n.cpuMillis, memory_mb: n.memoryMB, replicas: JSON.stringify(n.replicas) })
    }
    this.dirty.clear()
    try {
      await writeHeartbeatBatch(this.db, beats)
    } catch (e) {
      for (const b of beats) this.dirty.add(b.name) // kept for the next flush
      throw e
    }
  }

  /** Heartbeats other Platforms took (nodes fail over between them): liveness for placement here. */
  private async pullHeartbeats(): Promise<void> {
    const since = this.syncedTo - 5_000
    for (const row of await heartbeatsSince(this.db, since)) {
      this.syncedTo = Math.max(this.syncedTo, row.last_seen_at)
      const n = this.nodes.get(row.name)
      // New here, or revoked, rotated, drained or rebound elsewhere and the notice did not arrive.
      if (!n || n.generation !== row.generation || n.revokedAt !== row.revoked_at || n.drained !== (row.drained === 1) || n.certSha256 !== row.cert_sha256) {
        await this.refresh(row.name)
        if (n) this.onRemoteChange(row.name)
        continue
      }
      if (n.lastSeenAt !== null && n.lastSeenAt >= row.last_seen_at) continue
      const changed = n.lastSeenAt === null || row.last_seen_at - n.lastSeenAt > this.staleAfterMs || n.cpuMillis !== row.cpu_millis || n.memoryMB !== row.memory_mb || JSON.stringify(n.replicas) !== (row.replicas ?? '[]')
      n.lastSeenAt = row.last_seen_at
      n.version = row.version
      n.cpuMillis = row.cpu_millis
      n.memoryMB = row.memory_mb
      try {
        n.replicas = row.replicas ? (JSON.parse(row.replicas) as ReplicaStatus[]) : []
      } catch {}
      if (changed) this.onRemoteHeartbeat(n)
    }
  }

  get(name: string): NodeEntry | undefined {
    return this.nodes.get(name)
  }

  /** Node names in code-unit order (listings page through it); made again after a node comes or goes. */
  sortedNames(): readonly string[] {
    this.sorted ??= [...this.nodes.keys()].sort()
    return this.sorted
  }
  private sorted: string[] | null = null

  /** Sets one node from a store row (null: it is gone). */
  reload(row: NodeRow | null, name: string): void {
    if (row) {
      const had = this.nodes.get(name)
      const fresh = fromRow(row)
      // A heartbeat this Platform holds but has not flushed is newer than the row.
      if (had?.lastSeenAt && (fresh.lastSeenAt ?? 0) < had.lastSeenAt) Object.assign(fresh, { lastSeenAt: had.lastSeenAt, version: had.version, cpuMillis: had.cpuMillis, memoryMB: had.memoryMB, replicas: had.replicas })
      if (!had) this.sorted = null
      this.nodes.set(name, { ...fresh, probe: had?.probe })
    } else if (this.nodes.delete(name)) this.sorted = null
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
  heartbeat(n: NodeEntry, beat: { version?: string; cpuMillis?: number; memoryMB?: number; replicas?: ReplicaStatus[] }): boolean {
    const now = this.now()
    let changed = n.lastSeenAt === null || now - n.lastSeenAt > this.staleAfterMs
    n.lastSeenAt = now
    if (beat.version !== undefined) n.version = beat.version
    if (beat.cpuMillis !== undefined && beat.cpuMillis !== n.cpuMillis) {
      n.cpuMillis = beat.cpuMillis
      changed = true
    }
    if (beat.memoryMB !== undefined && beat.memoryMB !== n.memoryMB) {
      n.memoryMB = beat.memoryMB
      changed = true
    }
    if (beat.replicas !== undefined && (beat.replicas.length > 0 || n.replicas.length > 0) && JSON.stringify(beat.replicas) !== JSON.stringify(n.replicas)) {
      n.replicas = beat.replicas
      changed = true
    }
    this.dirty.add(n.name)
    return changed
  }

  /** Ready, or heartbeating within the stale window, with a credential that still works (SPEC §16.8). */
  healthy(n: NodeEntry): boolean {
    if (n.revokedAt !== null || (n.auth === 'enrolled' && n.certSha256 === null)) return false
    return n.lastSeenAt !== null && this.now() - n.lastSeenAt <= this.staleAfterMs
  }

  state(n: NodeEntry): { readonly state: NodeStateName; readonly reason?: string } {
    if (n.revokedAt !== null) return { state: 'revoked' }
    if (n.lastSeenAt === null) return { state: 'enrolled', reason: 'no heartbeat yet' }
    if (this.now() - n.lastSeenAt > this.staleAfterMs) return { state: 'unreachable', reason: `no heartbeat for ${Math.round((this.now() - n.lastSeenAt) / 1000)}s` }
    if (n.url) {
      // Heartbeating, not probed yet: still coming up, not unreachable (SPEC §17.2).
      if (!n.probe) return { state: 'enrolled', reason: 'health probe pending' }
      if (!n.probe.ok) return { state: 'unreachable', reason: n.probe.reason ?? 'health probe failed' }
    }
    return READY
  }
}

/** One object for the common answer (state runs on every heartbeat and for every node listed). */
const READY: { readonly state: 'ready' } = Object.freeze({ state: 'ready' })
