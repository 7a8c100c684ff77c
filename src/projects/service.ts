// Workloads on the Platform: projects, their placement on nodes, and each
// node's signed assignments (long-polled by its Agent).
//
// Several Platforms may share the store (docs/storage-ha.md). A deploy or remove on
// any of them writes the store and tells the others. One Platform, the holder
// of the `placement` lease, places: it reconciles whenever projects or nodes
// change (and on a timer for nodes that go quiet) and writes placements and
// each node's assignments (revision and replicas) in one fenced transaction.
// Every Platform serves a node's assignments from what the store holds,
// reloading when told, and wakes the long polls of its own connected nodes.
import { canonicalJson } from '../crypto/ed25519.ts'
import { MusterError } from '../errors.ts'
import type { Context } from '../context/context.ts'
import type { Fabric } from '../fabric/fabric.ts'
import { LeaseLost, type Lease } from '../context/leases.ts'
import { log } from '../log.ts'
import type { Db } from '../store/db.ts'
import { allNodeAssignments, bumpNodeAssignment } from '../store/node-assignments.ts'
import { allPlacements, allProjects, deleteProject, replacePlacements, setPrevious, upsertProject } from '../store/projects.ts'
import { projectFromRow, projectToRow, type Project } from './project-row.ts'
import { ASSIGNMENTS } from '../signed/documents.ts'
import { signDocument } from '../signed/signed.ts'
import type { AssignedReplica, AssignmentPayload, SignedAssignments } from '../wire/projects.ts'
import { FieldSeal } from '../context/vault.ts'
import { assignmentDigest, assignmentsByNode, runsCheck, type RollingPrevious } from './by-node.ts'
import { place, type Placement, type PlacementNode, type PlacementResult } from './placement.ts'
import type { ProjectRemoved, ProjectSpec, ProjectView, Shortfall } from '../wire/projects.ts'
import type { ReplicaStatus } from '../wire/nodes.ts'
import { spanEnd, spanStart } from '../loop-spans.ts'

/**
 * A project as deployed; `origin` says who placed it (local, or controller),
 * `deployedBy` the operator who deployed it here (none: placed by a controller).
 */
export type ProjectInput = ProjectSpec & { origin?: string; deployedBy?: { name: string; role: string } }

/** The in-process Agent of the Platform's own node. */
export interface LocalNodeHooks {
  capacity(): { cpuMillis: number; memoryMB: number }
  status(): ReplicaStatus[]
  apply(doc: SignedAssignments): void
}

/** A node's assignments as stored; `replicas` null when written by a version that did not store them. */
interface Wanted {
  revision: number
  digest: string
  replicas: AssignedReplica[] | null
}

/** Only a superadmin's own deploy may run on `local`, with the Platform's privileges (docs/security.md). */
const mayRunOnLocal = (p: Project) => p.origin === 'local' && p.deployerRole === 'superadmin'

/** An old revision's replicas run until the new ones do, or this long at most. */
const ROLLING_LIMIT_MS = 10 * 60_000
/** A deploy on a Platform that does not place waits this long for the placing one to place it. */
const PLACED_WAIT_MS = 3_000

export class Projects {
  private readonly db: Db
  private projects = new Map<string, Project>()
  private placements: Placement[] = []
  private result: PlacementResult = { placements: [], shortfall: new Map(), reasons: new Map() }
  private readonly wanted = new Map<string, Wanted>()
  private readonly signed = new Map<string, SignedAssignments>()
  private readonly waiters = new Map<string, Set<() => void>>()
  private dirty = true
  private timer: ReturnType<typeof setInterval> | undefined
  /** Stopped (shutdown or an engine swap): long polls answer at once. */
  private stopped = false
  /** Reconciliations and reloads run one at a time, in order. */
  private queue: Promise<void> = Promise.resolve()
  private readonly now: () => number
  private readonly lease: Lease
  /** Env values are sealed in the store (projects, their previous revision, node assignments): docs/security.md. */
  private readonly fields: FieldSeal
  private readonly digestOf: (replicas: AssignedReplica[]) => string
  local: LocalNodeHooks | undefined

  private constructor(
    private readonly ctx: Context,
    private readonly fabric: Fabric,
    /** How long an unreachable node keeps its replicas before they move. */
    private readonly graceMs: number,
  ) {
    this.db = ctx.store
    this.now = ctx.now
    this.fields = new FieldSeal(ctx.masterKey)
    this.digestOf = assignmentDigest(ctx.masterKey)
    this.lease = ctx.leases.lease('placement')
    fabric.assignmentRevision = (node) => this.wanted.get(node)?.revision ?? 0
    fabric.inUseChecks.push((node) => {
      const here = this.placements.filter((p) => p.node === node)
      return here.length ? `${here.length} replica(s) of ${[...new Set(here.map((p) => p.project))].join(', ')} are placed there` : null
    })
    fabric.heartbeatListeners.push(() => (this.dirty = true))
    fabric.nodeChangeListeners.push(() => this.reconcile().catch(() => {}))
    // Another Platform deployed, removed or placed: read the store again (and place, when this one does).
    const remote = (_key: string, local: boolean) => {
      if (!local) void this.enqueue(async () => (await this.load(), this.lease.held && (await this.reconcileOnce()))).catch(() => {})
    }
    ctx.changes.on('project', remote)
    ctx.changes.on('assignments', remote)
    // Taking placement over: start from what the store holds, then place.
    this.lease.onChange((held) => (held ? this.enqueue(async () => (await this.load(), await this.reconcileOnce())) : undefined))
  }

  static async open(ctx: Context, fabric: Fabric, graceMs: number): Promise<Projects> {
    const p = new Projects(ctx, fabric, graceMs)
    await p.load()
    return p
  }

  async start(intervalMs = 250): Promise<void> {
    let ticks = 0
    this.timer = setInterval(() => {
      ticks++
      // Not placing: read the store every 2 s anyway, in case a notice was lost.
      if (!this.lease.held && ticks % 8 === 0) void this.enqueue(() => this.load()).catch(() => {})
      if (this.dirty || ticks % 8 === 0) void this.reconcile()
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
    return this.queue
  }

  // ---- operator API ----------------------------------------------------------

  async deploy(input: ProjectInput): Promise<ProjectView> {
    const old = this.projects.get(input.name)
    const spec = { command: input.command, env: input.env ?? {}, cpu: input.cpu ?? 100, memory: input.memory ?? 64 }
    const same = old && canonicalJson({ command: old.command, env: old.env, cpu: old.cpu, memory: old.memory }) === canonicalJson(spec)
    const revision = old ? (same ? old.revision : old.revision + 1) : 1
    // A changed spec rolls: the old revision keeps running where it is until the new replicas run.
    const previous: RollingPrevious | null =
      old && !same ? { revision: old.revision, command: old.command, env: old.env, cpu: old.cpu, memory: old.memory, placements: this.placements.filter((p) => p.project === old.name), since: this.now() } : (old?.previous ?? null)
    // Who deployed it is recorded on every deploy: an update by an operator takes a superadmin's project off `local`.
    const p: Project = { name: input.name, ...spec, replicas: input.replicas, revision, previous, origin: input.origin ?? old?.origin ?? 'local', nodeLabels: input.nodeLabels ?? {}, deployedBy: input.deployedBy?.name ?? null, deployerRole: input.deployedBy?.role ?? null }
    await upsertProject(this.db, projectToRow(p, this.fields), this.now())
    this.projects.set(p.name, p)
    await this.ctx.changes.publish('project', p.name)
    await this.placed(p)
    return this.view(p)
  }

  async remove(name: string): Promise<ProjectRemoved> {
    if (!this.projects.has(name)) throw new MusterError('not-found', `No project named ${name}.`)
    await deleteProject(this.db, name)
    this.projects.delete(name)
    this.placements = this.placements.filter((p) => p.project !== name)
    await this.ctx.changes.publish('project', name)
    await this.placed()
    return { name, removed: true }
  }

  /** Placed here when this Platform places; else waits (briefly) for the one that does. */
  private async placed(p?: Project): Promise<void> {
    if (this.lease.held) return this.reconcile()
    const done = () => !p || this.placements.filter((x) => x.project === p.name).length === p.replicas
    const deadline = performance.now() + PLACED_WAIT_MS
    while (!done() && performance.now() < deadline) await Bun.sleep(50)
    await this.reconcile() // the shortfall as this Platform sees it
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
  shortfall(): Shortfall {
    const projects = Object.fromEntries(this.result.shortfall)
    return { total: Object.values(projects).reduce((a, b) => a + b, 0), projects }
  }

  /** Replicas over all projects for the metrics: wanted, placed on a node, running there (this revision), short. */
  replicaCounts(): { projects: number; wanted: number; placed: number; running: number; short: number } {
    const c = { projects: this.projects.size, wanted: 0, placed: 0, running: 0, short: this.shortfall().total }
    for (const p of this.projects.values()) c.wanted += p.replicas
    for (const x of this.placements) {
      const p = x.node ? this.projects.get(x.project) : undefined
      if (!p || !x.node) continue
      c.placed++
      if (this.replicaStates(x.node).some((r) => r.project === p.name && r.replica === x.replica && r.state === 'running' && (r.revision ?? p.revision) === p.revision)) c.running++
    }
    return c
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
        return { replica: x.replica, node: x.node, state: st?.state ?? 'pending', ...(st?.exitCode !== undefined ? { exitCode: st.exitCode } : {}), ...(st?.reason ? { reason: st.reason } : {}) }
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

  private enqueue(fn: () => Promise<unknown>): Promise<void> {
    const run = this.queue.then(fn).then(() => {})
    this.queue = run.catch((e) => log.warn(`placing projects: ${(e as Error).message}`))
    return run
  }

  /**
   * Places (on the Platform holding the placement lease), after whatever runs now.
   * One that has not started yet will see this change too: a burst (1,000 nodes
   * enrolling) costs one pass, not one each.
   */
  reconcile(): Promise<void> {
    if (this.queued) return this.queued
    const run = this.enqueue(() => {
      this.queued = undefined
      return this.reconcileOnce()
    })
    this.queued = run
    return run
  }
  private queued: Promise<void> | undefined

  /** Reads projects, placements and assignments from the store; wakes the long polls whose revision moved. */
  private async load(): Promise<void> {
    const [projects, placements, rows] = await Promise.all([allProjects(this.db), allPlacements(this.db), allNodeAssignments(this.db)])
    this.projects = new Map(projects.map((r) => [r.name, projectFromRow(r, this.fields)]))
    this.placements = placements
    for (const r of rows) {
      const had = this.wanted.get(r.node)
      if (had && had.revision === r.revision && had.digest === r.digest) continue
      let replicas: AssignedReplica[] | null = null
      try {
        replicas = r.replicas === null ? null : (JSON.parse(this.fields.open('node_assignments', r.node, 'replicas', r.replicas)) as AssignedReplica[])
      } catch {}
      this.changedAssignments(r.node, { revision: r.revision, digest: r.digest, replicas })
    }
  }

  /** A node's assignments moved: a new document, and its long polls here answer at once. */
  private changedAssignments(node: string, w: Wanted): void {
    this.wanted.set(node, w)
    this.ctx.metrics.noteAssignmentRevision(w.revision)
    this.signed.delete(node)
    for (const done of this.waiters.get(node) ?? []) done()
  }

  /** Some node's current document lists replicas (or is an old one that kept none). */
  private assignedAnywhere = (): boolean => [...this.wanted.values()].some((w) => w.replicas === null || w.replicas.length > 0)

  private async reconcileOnce(): Promise<void> {
    this.dirty = false
    // Nothing deployed, nothing placed, every document sent out empty: nothing to do (a pass costs O(nodes)).
    if (this.projects.size === 0 && this.placements.length === 0 && !this.assignedAnywhere()) return
    const specs = [...this.projects.values()].map((p) => ({ name: p.name, replicas: p.replicas, cpu: p.cpu, memory: p.memory, nodeLabels: p.nodeLabels, allowLocal: mayRunOnLocal(p) }))
    const started = spanStart()
    const result = place(specs, this.placementNodes(), this.placements)
    spanEnd('placement', started)
    this.result = result
    // Not placing: the result only shows this Platform's view of the shortfall.
    if (!this.lease.held) return
    const runs = runsCheck((n) => this.replicaStates(n))
    // Rollouts that finished: every new replica runs (or it took too long).
    const finished = [...this.projects.values()].filter(
      (p) => p.previous && (result.placements.filter((x) => x.project === p.name && x.node && runs(x.node, p.name, x.replica, p.revision)).length >= p.replicas || this.now() - p.previous.since > ROLLING_LIMIT_MS),
    )
    const projects = [...this.projects.values()].map((p) => (finished.includes(p) ? { ...p, previous: null } : p))
    const byNode = assignmentsByNode(projects, result.placements, runs)
    const changes: { node: string; digest: string; replicas: AssignedReplica[]; revision: number }[] = []
    for (const node of new Set([...byNode.keys(), ...this.wanted.keys()])) {
      const replicas = byNode.get(node) ?? []
      const digest = this.digestOf(replicas)
      const had = this.wanted.get(node)
      if (had && had.digest === digest && had.replicas !== null) continue
      changes.push({ node, digest, replicas, revision: 0 })
    }
    const placementsChanged = canonicalJson(result.placements) !== canonicalJson(this.placements)
    if (!placementsChanged && finished.length === 0 && changes.length === 0) return
    try {
      await this.lease.fenced(async (t) => {
        if (placementsChanged) await replacePlacements(t, result.placements)
        for (const p of finished) await setPrevious(t, p.name, null)
        for (const c of changes) c.revision = await bumpNodeAssignment(t, c.node, c.digest, this.fields.seal('node_assignments', c.node, 'replicas', JSON.stringify(c.replicas)))
      })
    } catch (e) {
      // Another Platform places now: take what the store holds instead.
      if (e instanceof LeaseLost) return this.load()
      throw e
    }
    this.placements = result.placements
    for (const p of finished) p.previous = null
    for (const c of changes) {
      this.changedAssignments(c.node, { revision: c.revision, digest: c.digest, replicas: c.replicas })
      if (c.node === 'local' && this.local) this.local.apply(await this.assignmentsNow(c.node))
    }
    await this.ctx.changes.publish('assignments')
  }

  // ---- node side ---------------------------------------------------------------

  /** The node's current signed assignments. */
  async assignmentsNow(node: string): Promise<SignedAssignments> {
    const cached = this.signed.get(node)
    const w = this.wanted.get(node)
    const revision = w?.revision ?? 0
    // Signed again once another key signs: a document lives as long as its revision, keys do not.
    if (cached && cached.payload.revision === revision && cached.kid === this.fabric.trust.currentKid()) return cached
    // Written by an earlier version, which kept no replicas: the placing Platform rewrites it at once.
    if (w && w.replicas === null) throw new MusterError('store-unavailable', 'This node\'s assignments are being rewritten; try again shortly.')
    const payload: AssignmentPayload = { node, revision, issuedAt: new Date(this.now()).toISOString(), replicas: w?.replicas ?? [] }
    const doc = signDocument(ASSIGNMENTS, (d, m) => this.fabric.trust.sign(d, m), payload)
    this.signed.set(node, doc)
    return doc
  }

  /** Long poll: answers at once when the revision is past `after`, else when it changes or `waitMs` passes. */
  async assignments(node: string, after: number | undefined, waitMs: number): Promise<SignedAssignments> {
    const current = this.wanted.get(node)?.revision ?? 0
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
