// The node registry: every node in memory (the hot path reads only memory),
// structural changes written through at once, heartbeats batched to disk.
import type { Db } from '../store/db.ts'
import { allNodes, updateNodeFields, writeHeartbeats, type NodeRow } from '../store/nodes.ts'
import { compareVersions, isVersion, VERSION } from '../version.ts'

export type NodeStateName = 'enrolled' | 'ready' | 'unreachable' | 'revoked'
export type Compatibility = 'current' | 'behind' | 'unknown'

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
  }
}

export function compatibilityOf(version: string | null): Compatibility {
  if (!version || !isVersion(version)) return 'unknown'
  return compareVersions(version, VERSION) < 0 ? 'behind' : 'current'
}

export class Registry {
  readonly nodes = new Map<string, NodeEntry>()
  private readonly dirty = new Set<string>()
  private timer: ReturnType<typeof setInterval> | undefined

  constructor(
    private readonly db: Db,
    private readonly now: () => number,
    /** A node without a heartbeat for this long is unreachable. */
    readonly staleAfterMs: number,
  ) {
    for (const r of allNodes(db)) this.nodes.set(r.name, fromRow(r))
  }

  /** Writes batched heartbeats every `intervalMs`. */
  startFlushing(intervalMs = 1000): void {
    this.timer = setInterval(() => this.flush(), intervalMs)
    this.timer.unref?.()
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer)
    this.flush()
  }

  flush(): void {
    if (this.dirty.size === 0) return
    const beats = []
    for (const name of this.dirty) {
      const n = this.nodes.get(name)
      if (!n || n.lastSeenAt === null) continue
      beats.push({ name, last_seen_at: n.lastSeenAt, version: n.version, cpu_millis: n.cpuMillis, memory_mb: n.memoryMB, replicas: JSON.stringify(n.replicas) })
    }
    this.dirty.clear()
    writeHeartbeats(this.db, beats)
  }

  get(name: string): NodeEntry | undefined {
    return this.nodes.get(name)
  }

  /** Reloads one node from the store after a structural write. */
  reload(row: NodeRow | null, name: string): void {
    if (row) this.nodes.set(name, { ...fromRow(row), probe: this.nodes.get(name)?.probe })
    else this.nodes.delete(name)
  }

  /** Writes fields through to the store and memory at once. */
  update(name: string, fields: Partial<Omit<NodeRow, 'name'>>): void {
    updateNodeFields(this.db, name, fields)
    const row = this.db.query<NodeRow, [string]>('SELECT * FROM nodes WHERE name = ?1').get(name)
    this.reload(row, name)
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

  state(n: NodeEntry): { state: NodeStateName; reason?: string } {
    if (n.revokedAt !== null) return { state: 'revoked' }
    if (n.lastSeenAt === null) return { state: 'enrolled', reason: 'no heartbeat yet' }
    if (this.now() - n.lastSeenAt > this.staleAfterMs) return { state: 'unreachable', reason: `no heartbeat for ${Math.round((this.now() - n.lastSeenAt) / 1000)}s` }
    if (n.url) {
      if (!n.probe) return { state: 'unreachable', reason: 'health probe pending' }
      if (!n.probe.ok) return { state: 'unreachable', reason: n.probe.reason ?? 'health probe failed' }
    }
    return { state: 'ready' }
  }
}
