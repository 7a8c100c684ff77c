// Workloads on the Platform: projects, their placement on nodes, and each
// node's signed assignments (long-polled by its Agent). Reconciles whenever
// projects or nodes change, and on a timer for nodes that go quiet.
import { canonicalJson } from '../crypto/ed25519.ts'
import { sha256Hex } from '../crypto/tokens.ts'
import { MusterError } from '../errors.ts'
import type { Fabric } from '../fabric/fabric.ts'
import type { ReplicaStatus } from '../fabric/registry.ts'
import type { Db } from '../store/db.ts'
import { allPlacements, allProjects, deleteProject, nodeAssignment, replacePlacements, saveNodeAssignment, setPrevious, upsertProject, type ProjectRow } from '../store/projects.ts'
import { ASSIGNMENTS_DOMAIN, assignmentBytes, type AssignedReplica, type AssignmentPayload, type SignedAssignments } from './assignments.ts'
import type { ProjectSpec } from './spec.ts'
import { place, type Placement, type PlacementNode, type PlacementResult, type ShortfallReason } from './placement.ts'

/** A project as deployed; `origin` says who placed it (local, or controller). */
export type ProjectInput = ProjectSpec & { origin?: string }

interface Previous {
  revision: number
  command: string[]
  env: Record<string, string>
  cpu: number
  memory: number
  placements: { replica: number; node: string | null }[]
  since: number
}

interface Project {
  name: string
  command: string[]
  env: Record<string, string>
  replicas: number
  cpu: number
  memory: number
  revision: number
  previous: Previous | null
  origin: string
}

export interface PlacementView {
  replica: number
  node: string | null
  state: 'pending' | 'running' | 'failed' | 'stopped'
  exitCode?: number | null
}

export type ProjectView = Omit<Project, 'previous'> & {
  shortfall: number
  reason: ShortfallReason | null
  placements: PlacementView[]
}

/** The in-process Agent of the Platform's own node. */
export interface LocalNodeHooks {
  capacity(): { cpuMillis: number; memoryMB: number }
  status(): ReplicaStatus[]
  apply(doc: SignedAssignments): void
}

const fromRow = (r: ProjectRow): Project => ({
  name: r.name,
  command: JSON.parse(r.command) as string[],
  env: JSON.parse(r.env) as Record<string, string>,
  replicas: r.replicas,
  cpu: r.cpu,
  memory: r.memory,
  revision: r.revision,
  previous: r.previous ? (JSON.parse(r.previous) as Previous) : null,
  origin: r.origin,
})

/** An old revision's replicas run until the new ones do, or this long at most. */
const ROLLING_LIMIT_MS = 10 * 60_000

export class Projects {
  private readonly db: Db
  private readonly projects = new Map<string, Project>()
  private placements: Placement[]
  private result: PlacementResult = { placements: [], shortfall: new Map(), reasons: new Map() }
  private readonly wanted = new Map<string, { revision: number; replicas: AssignedReplica[] }>()
  private readonly signed = new Map<string, SignedAssignments>()
  private readonly waiters = new Map<string, Set<() => void>>()
  private dirty = true
  private timer: ReturnType<typeof setInterval> | undefined
  /** Stopped (shutdown or an engine swap): long polls answer at once. */
  private stopped = false
  local: LocalNodeHooks | undefined

  constructor(
    private readonly fabric: Fabric,
    private readonly now: () => number,
    /** How long an unreachable node keeps its replicas before they move. */
    private readonly graceMs: number,
  ) {
    this.db = fabric.db
    for (const r of allProjects(this.db)) this.projects.set(r.name, fromRow(r))
    this.placements = allPlacements(this.db)
    fabric.inUseChecks.push((node) => {
      const here = this.placements.filter((p) => p.node === node)
      return here.length ? `${here.length} replica(s) of ${[...new Set(here.map((p) => p.project))].join(', ')} are placed there` : null
    })
    fabric.heartbeatListeners.push(() => (this.dirty = true))
    fabric.nodeChangeListeners.push(() => this.reconcile())
  }

  start(intervalMs = 250): void {
    let ticks = 0
    this.timer = setInterval(() => {
      if (this.dirty || ++ticks % 8 === 0) this.reconcile()
    }, intervalMs)
    this.timer.unref?.()
    this.reconcile()
    // After a restart the local node's assignments are unchanged, so publish() does not hand them over: do it here.
    if (this.local) this.local.apply(this.assignmentsNow('local'))
  }

  stop(): void {
    this.stopped = true
    if (this.timer) clearInterval(this.timer)
    for (const set of this.waiters.values()) for (const wake of set) wake()
  }

  // ---- operator API ----------------------------------------------------------

  deploy(input: ProjectInput): ProjectView {
    const old = this.projects.get(input.name)
    const spec = { command: input.command, env: input.env ?? {}, cpu: input.cpu ?? 100, memory: input.memory ?? 64 }
    const same = old && canonicalJson({ command: old.command, env: old.env, cpu: old.cpu, memory: old.memory }) === canonicalJson(spec)
    const revision = old ? (same ? old.revision : old.revision + 1) : 1
    // A changed spec rolls: the old revision keeps running where it is until the new replicas run.
    const previous: Previous | null =
      old && !same ? { revision: old.revision, command: old.command, env: old.env, cpu: old.cpu, memory: old.memory, placements: this.placements.filter((p) => p.project === old.name), since: this.now() } : (old?.previous ?? null)
    const p: Project = { name: input.name, ...spec, replicas: input.replicas, revision, previous, origin: input.origin ?? old?.origin ?? 'local' }
    upsertProject(this.db, { name: p.name, command: JSON.stringify(p.command), env: JSON.stringify(p.env), replicas: p.replicas, cpu: p.cpu, memory: p.memory, revision, previous: previous ? JSON.stringify(previous) : null, origin: p.origin }, this.now())
    this.projects.set(p.name, p)
    this.reconcile()
    return this.view(p)
  }

  remove(name: string): { name: string; removed: true } {
    if (!this.projects.has(name)) throw new MusterError('not-found', `No project named ${name}.`)
    deleteProject(this.db, name)
    this.projects.delete(name)
    this.placements = this.placements.filter((p) => p.project !== name)
    this.reconcile()
    return { name, removed: true }
  }

  list(): { projects: ProjectView[] } {
    return { projects: [...this.projects.values()].sort((a, b) => a.name.localeCompare(b.name)).map((p) => this.view(p)) }
  }

  show(name: string): ProjectView {
    const p = this.projects.get(name)
    if (!p) throw new MusterError('not-found', `No project named ${name}.`)
    return this.view(p)
  }

  has(name: string): boolean {
    return this.projects.has(name)
  }

  /** Replicas that fit nowhere although nodes were eligible (the autoscaler's signal). */
  shortfall(): { total: number; projects: Record<string, number> } {
    const projects = Object.fromEntries(this.result.shortfall)
    return { total: Object.values(projects).reduce((a, b) => a + b, 0), projects }
  }

  private replicaStates(node: string): ReplicaStatus[] {
    if (node === 'local') return this.local?.status() ?? []
    return this.fabric.registry.get(node)?.replicas ?? []
  }

  private view(p: Project): ProjectView {
    const placements = this.placements
      .filter((x) => x.project === p.name)
      .sort((a, b) => a.replica - b.replica)
      .map((x) => {
        const st = x.node ? this.replicaStates(x.node).find((r) => r.project === p.name && r.replica === x.replica && (r.revision ?? p.revision) === p.revision) : undefined
        return { replica: x.replica, node: x.node, state: st?.state ?? 'pending', ...(st?.exitCode !== undefined ? { exitCode: st.exitCode } : {}) }
      })
    return {
      name: p.name,
      command: p.command,
      env: p.env,
      replicas: p.replicas,
      cpu: p.cpu,
      memory: p.memory,
      revision: p.revision,
      origin: p.origin,
      shortfall: this.result.shortfall.get(p.name) ?? 0,
      reason: this.result.reasons.get(p.name) ?? null,
      placements,
    }
  }

  // ---- reconciliation ----------------------------------------------------------

  private placementNodes(): PlacementNode[] {
    const reg = this.fabric.registry
    const out: PlacementNode[] = []
    for (const n of reg.nodes.values()) {
      if (n.cpuMillis === null || n.memoryMB === null || n.revokedAt !== null) continue
      const { state } = reg.state(n)
      const quietFor = n.lastSeenAt === null ? Number.POSITIVE_INFINITY : this.now() - n.lastSeenAt
      const keeps = !n.drained && (state === 'ready' || (state === 'unreachable' && quietFor <= reg.staleAfterMs + this.graceMs))
      out.push({ name: n.name, cpuMillis: n.cpuMillis, memoryMB: n.memoryMB, schedulable: state === 'ready' && !n.drained, keeps })
    }
    if (this.local) out.push({ name: 'local', ...this.local.capacity(), schedulable: true, keeps: true })
    return out
  }

  reconcile(): void {
    this.dirty = false
    const specs = [...this.projects.values()].map((p) => ({ name: p.name, replicas: p.replicas, cpu: p.cpu, memory: p.memory }))
    this.result = place(specs, this.placementNodes(), this.placements)
    if (canonicalJson(this.result.placements) !== canonicalJson(this.placements)) {
      this.placements = this.result.placements
      replacePlacements(this.db, this.placements)
    }
    this.finishRollouts()
    this.publish()
  }

  /** Drops an old revision once every new replica runs (or the rollout took too long). */
  private finishRollouts(): void {
    for (const p of this.projects.values()) {
      if (!p.previous) continue
      const running = this.placements.filter((x) => x.project === p.name && x.node && this.replicaStates(x.node).some((r) => r.project === p.name && r.replica === x.replica && r.revision === p.revision && r.state === 'running'))
      if (running.length >= p.replicas || this.now() - p.previous.since > ROLLING_LIMIT_MS) {
        p.previous = null
        setPrevious(this.db, p.name, null)
      }
    }
  }

  private publish(): void {
    const byNode = new Map<string, AssignedReplica[]>()
    const add = (node: string | null, r: AssignedReplica) => {
      if (!node) return
      const list = byNode.get(node) ?? []
      list.push(r)
      byNode.set(node, list)
    }
    for (const p of this.projects.values()) {
      const spec = { command: p.command, env: p.env, cpu: p.cpu, memory: p.memory }
      for (const x of this.placements) if (x.project === p.name) add(x.node, { project: p.name, replica: x.replica, revision: p.revision, ...spec })
      if (p.previous) {
        const prev = p.previous
        for (const x of prev.placements) {
          const newOne = this.placements.find((y) => y.project === p.name && y.replica === x.replica)
          const replaced = newOne?.node && this.replicaStates(newOne.node).some((r) => r.project === p.name && r.replica === x.replica && r.revision === p.revision && r.state === 'running')
          if (!replaced) add(x.node, { project: p.name, replica: x.replica, revision: prev.revision, command: prev.command, env: prev.env, cpu: prev.cpu, memory: prev.memory })
        }
      }
    }
    const nodes = new Set([...byNode.keys(), ...this.wanted.keys()])
    for (const node of nodes) {
      const replicas = (byNode.get(node) ?? []).sort((a, b) => a.project.localeCompare(b.project) || a.replica - b.replica || a.revision - b.revision)
      const digest = sha256Hex(canonicalJson(replicas))
      const saved = this.wanted.get(node) ? { revision: this.wanted.get(node)!.revision, digest: sha256Hex(canonicalJson(this.wanted.get(node)!.replicas)) } : nodeAssignment(this.db, node)
      if (saved && saved.digest === digest) {
        if (!this.wanted.has(node)) this.wanted.set(node, { revision: saved.revision, replicas })
        continue
      }
      const revision = (saved?.revision ?? 0) + 1
      saveNodeAssignment(this.db, node, revision, digest)
      this.wanted.set(node, { revision, replicas })
      this.signed.delete(node)
      for (const wake of this.waiters.get(node) ?? []) wake()
      if (node === 'local' && this.local) this.local.apply(this.assignmentsNow(node))
    }
  }

  // ---- node side ---------------------------------------------------------------

  /** The node's current signed assignments. */
  assignmentsNow(node: string): SignedAssignments {
    const cached = this.signed.get(node)
    const w = this.wanted.get(node) ?? { revision: nodeAssignment(this.db, node)?.revision ?? 0, replicas: [] }
    if (cached && cached.payload.revision === w.revision) return cached
    const payload: AssignmentPayload = { node, revision: w.revision, issuedAt: new Date(this.now()).toISOString(), replicas: w.replicas }
    const { kid, signature } = this.fabric.trust.sign(ASSIGNMENTS_DOMAIN, assignmentBytes(payload))
    const doc = { payload, kid, signature }
    this.signed.set(node, doc)
    return doc
  }

  /** Long poll: answers at once when the revision is past `after`, else when it changes or `waitMs` passes. */
  async assignments(node: string, after: number | undefined, waitMs: number): Promise<SignedAssignments> {
    const current = this.wanted.get(node)?.revision ?? nodeAssignment(this.db, node)?.revision ?? 0
    if (after === undefined || current > after || waitMs <= 0 || this.stopped) return this.assignmentsNow(node)
    await new Promise<void>((resolve) => {
      const set = this.waiters.get(node) ?? new Set()
      this.waiters.set(node, set)
      const done = () => {
        clearTimeout(t)
        set.delete(done)
        resolve()
      }
      const t = setTimeout(done, waitMs)
      set.add(done)
    })
    return this.assignmentsNow(node)
  }
}
