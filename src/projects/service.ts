// Workloads on the Platform: projects, their placement on nodes, and each
// node's signed assignments (long-polled by its Agent). Reconciles whenever
// projects or nodes change, and on a timer for nodes that go quiet.
import { canonicalJson } from '../crypto/ed25519.ts'
import { sha256Hex } from '../crypto/tokens.ts'
import { MusterError } from '../errors.ts'
import type { Context } from '../context.ts'
import type { Fabric } from '../fabric/fabric.ts'
import type { ReplicaStatus } from '../fabric/registry.ts'
import { log } from '../log.ts'
import type { Db } from '../store/db.ts'
import { allPlacements, allProjects, deleteProject, nodeAssignment, replacePlacements, saveNodeAssignment, setPrevious, upsertProject, type ProjectRow } from '../store/projects.ts'
import { ASSIGNMENTS_DOMAIN, assignmentBytes, type AssignedReplica, type AssignmentPayload, type SignedAssignments } from './assignments.ts'
import type { ProjectSpec } from './spec.ts'
import { place, type Placement, type PlacementNode, type PlacementResult, type ShortfallReason } from './placement.ts'
import { labelsFromJson, labelsToJson, type Labels } from '../fabric/labels.ts'

/**
 * A project as deployed; `origin` says who placed it (local, or controller),
 * `deployedBy` the operator who deployed it here (none: placed by a controller).
 */
export type ProjectInput = ProjectSpec & { origin?: string; deployedBy?: { name: string; role: string } }

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
  nodeLabels: Labels
  deployedBy: string | null
  deployerRole: string | null
}

export interface PlacementView {
  replica: number
  node: string | null
  state: 'pending' | 'running' | 'failed' | 'stopped'
  exitCode?: number | null
}

export type ProjectView = Omit<Project, 'previous' | 'deployerRole'> & {
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

type ProjectsFromStore = { projects: Project[]; placements: Placement[] }

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
  nodeLabels: labelsFromJson(r.node_labels),
  deployedBy: r.deployed_by,
  deployerRole: r.deployer_role,
})

/** Only a superadmin's own deploy may run on `local`, with the Platform's privileges (SPEC §16.6). */
const mayRunOnLocal = (p: Project) => p.origin === 'local' && p.deployerRole === 'superadmin'

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
  /** Reconciliations run one at a time, in order. */
  private reconciling: Promise<void> = Promise.resolve()
  private readonly now: () => number
  local: LocalNodeHooks | undefined

  private constructor(
    ctx: Context,
    private readonly fabric: Fabric,
    /** How long an unreachable node keeps its replicas before they move. */
    private readonly graceMs: number,
    loaded: ProjectsFromStore,
  ) {
    this.db = ctx.store
    this.now = ctx.now
    for (const p of loaded.projects) this.projects.set(p.name, p)
    this.placements = loaded.placements
    fabric.inUseChecks.push((node) => {
      const here = this.placements.filter((p) => p.node === node)
      return here.length ? `${here.length} replica(s) of ${[...new Set(here.map((p) => p.project))].join(', ')} are placed there` : null
    })
    fabric.heartbeatListeners.push(() => (this.dirty = true))
    fabric.nodeChangeListeners.push(() => void this.reconcile())
  }

  static async open(ctx: Context, fabric: Fabric, graceMs: number): Promise<Projects> {
    const projects = (await allProjects(ctx.store)).map(fromRow)
    return new Projects(ctx, fabric, graceMs, { projects, placements: await allPlacements(ctx.store) })
  }

  async start(intervalMs = 250): Promise<void> {
    let ticks = 0
    this.timer = setInterval(() => {
      if (this.dirty || ++ticks % 8 === 0) void this.reconcile()
    }, intervalMs)
    this.timer.unref?.()
    await this.reconcile()
    // After a restart the local node's assignments are unchanged, so publish() does not hand them over: do it here.
    if (this.local) this.local.apply(await this.assignmentsNow('local'))
  }

  /** Stops the loop and answers long polls; resolves when the reconciliation under way (if any) has finished. */
  stop(): Promise<void> {
    this.stopped = true
    if (this.timer) clearInterval(this.timer)
    for (const set of this.waiters.values()) for (const wake of set) wake()
    return this.reconciling
  }

  // ---- operator API ----------------------------------------------------------

  async deploy(input: ProjectInput): Promise<ProjectView> {
    const old = this.projects.get(input.name)
    const spec = { command: input.command, env: input.env ?? {}, cpu: input.cpu ?? 100, memory: input.memory ?? 64 }
    const same = old && canonicalJson({ command: old.command, env: old.env, cpu: old.cpu, memory: old.memory }) === canonicalJson(spec)
    const revision = old ? (same ? old.revision : old.revision + 1) : 1
    // A changed spec rolls: the old revision keeps running where it is until the new replicas run.
    const previous: Previous | null =
      old && !same ? { revision: old.revision, command: old.command, env: old.env, cpu: old.cpu, memory: old.memory, placements: this.placements.filter((p) => p.project === old.name), since: this.now() } : (old?.previous ?? null)
    // Who deployed it is recorded on every deploy: an update by an operator takes a superadmin's project off `local`.
    const p: Project = { name: input.name, ...spec, replicas: input.replicas, revision, previous, origin: input.origin ?? old?.origin ?? 'local', nodeLabels: input.nodeLabels ?? {}, deployedBy: input.deployedBy?.name ?? null, deployerRole: input.deployedBy?.role ?? null }
    const row = { name: p.name, command: JSON.stringify(p.command), env: JSON.stringify(p.env), replicas: p.replicas, cpu: p.cpu, memory: p.memory, revision, previous: previous ? JSON.stringify(previous) : null, origin: p.origin }
    await upsertProject(this.db, { ...row, deployed_by: p.deployedBy, deployer_role: p.deployerRole, node_labels: labelsToJson(p.nodeLabels) }, this.now())
    this.projects.set(p.name, p)
    await this.reconcile()
    return this.view(p)
  }

  async remove(name: string): Promise<{ name: string; removed: true }> {
    if (!this.projects.has(name)) throw new MusterError('not-found', `No project named ${name}.`)
    await deleteProject(this.db, name)
    this.projects.delete(name)
    this.placements = this.placements.filter((p) => p.project !== name)
    await this.reconcile()
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
      nodeLabels: p.nodeLabels,
      deployedBy: p.deployedBy,
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
      const { drained, labels } = this.fabric.nodeSettings(n) // the nodes file wins over the node's own
      const keeps = !drained && (state === 'ready' || (state === 'unreachable' && quietFor <= reg.staleAfterMs + this.graceMs))
      out.push({ name: n.name, cpuMillis: n.cpuMillis, memoryMB: n.memoryMB, schedulable: state === 'ready' && !drained, keeps, labels })
    }
    if (this.local) out.push({ name: 'local', ...this.local.capacity(), schedulable: true, keeps: true })
    return out
  }

  /** Places, then publishes every node's assignments; runs after the reconciliation in progress. */
  reconcile(): Promise<void> {
    const run = this.reconciling.then(() => this.reconcileOnce())
    this.reconciling = run.catch((e) => log.warn(`placing projects: ${(e as Error).message}`))
    return run
  }

  private async reconcileOnce(): Promise<void> {
    this.dirty = false
    const specs = [...this.projects.values()].map((p) => ({ name: p.name, replicas: p.replicas, cpu: p.cpu, memory: p.memory, nodeLabels: p.nodeLabels, allowLocal: mayRunOnLocal(p) }))
    this.result = place(specs, this.placementNodes(), this.placements)
    if (canonicalJson(this.result.placements) !== canonicalJson(this.placements)) {
      this.placements = this.result.placements
      await replacePlacements(this.db, this.placements)
    }
    await this.finishRollouts()
    await this.publish()
  }

  /** Drops an old revision once every new replica runs (or the rollout took too long). */
  private async finishRollouts(): Promise<void> {
    for (const p of this.projects.values()) {
      if (!p.previous) continue
      const running = this.placements.filter((x) => x.project === p.name && x.node && this.replicaStates(x.node).some((r) => r.project === p.name && r.replica === x.replica && r.revision === p.revision && r.state === 'running'))
      if (running.length >= p.replicas || this.now() - p.previous.since > ROLLING_LIMIT_MS) {
        p.previous = null
        await setPrevious(this.db, p.name, null)
      }
    }
  }

  private async publish(): Promise<void> {
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
      const saved = this.wanted.get(node) ? { revision: this.wanted.get(node)!.revision, digest: sha256Hex(canonicalJson(this.wanted.get(node)!.replicas)) } : await nodeAssignment(this.db, node)
      if (saved && saved.digest === digest) {
        if (!this.wanted.has(node)) this.wanted.set(node, { revision: saved.revision, replicas })
        continue
      }
      const revision = (saved?.revision ?? 0) + 1
      await saveNodeAssignment(this.db, node, revision, digest)
      this.wanted.set(node, { revision, replicas })
      this.signed.delete(node)
      for (const wake of this.waiters.get(node) ?? []) wake()
      if (node === 'local' && this.local) this.local.apply(await this.assignmentsNow(node))
    }
  }

  // ---- node side ---------------------------------------------------------------

  /** The node's current signed assignments. */
  async assignmentsNow(node: string): Promise<SignedAssignments> {
    const cached = this.signed.get(node)
    const w = this.wanted.get(node) ?? { revision: (await nodeAssignment(this.db, node))?.revision ?? 0, replicas: [] }
    // Signed again once another key signs: a document lives as long as its revision, keys do not.
    if (cached && cached.payload.revision === w.revision && cached.kid === this.fabric.trust.currentKid()) return cached
    const payload: AssignmentPayload = { node, revision: w.revision, issuedAt: new Date(this.now()).toISOString(), replicas: w.replicas }
    const { kid, signature } = this.fabric.trust.sign(ASSIGNMENTS_DOMAIN, assignmentBytes(payload))
    const doc = { payload, kid, signature }
    this.signed.set(node, doc)
    return doc
  }

  /** Long poll: answers at once when the revision is past `after`, else when it changes or `waitMs` passes. */
  async assignments(node: string, after: number | undefined, waitMs: number): Promise<SignedAssignments> {
    const current = this.wanted.get(node)?.revision ?? (await nodeAssignment(this.db, node))?.revision ?? 0
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
