// The Platform's metric families (docs/monitoring.md lists them with their
// meaning). Each Platform owns its families in a registry of its own
// (`PlatformMetrics`, on the Context as `ctx.metrics`): what it serves at
// GET /metrics is what it counted, even where several Platforms share one
// process (the tests' Platforms on one store). Counters are incremented in one
// line where the event happens; gauges are read at scrape time from what the
// Platform already keeps (counts, not walks: a scrape of a million-node fleet
// reads a handful of numbers). Label values come from fixed sets or from the
// code's own constants (route templates, lease names, provider names, error
// codes), never from a node name, a token or an address.
//
// This module imports nothing of muster: every part of the Platform may
// count here without an import circle. What the gauges read is handed in by
// the Platform (watch) as the small interfaces below.
import { Counter, Gauge, Histogram, Registry } from 'prom-client'
import { processRegistry } from './process.ts'

// ---- nodes --------------------------------------------------------------------------

export const NODE_STATES = ['enrolled', 'ready', 'unreachable', 'revoked'] as const
export const COMPATIBILITIES = ['current', 'behind', 'newer', 'unknown'] as const
/** Heartbeat age buckets (upper bounds in seconds), non-cumulative; `never`: no heartbeat yet. */
export const AGE_BUCKETS = [
  { label: '0-10s', upTo: 10 },
  { label: '10-30s', upTo: 30 },
  { label: '30-60s', upTo: 60 },
  { label: '1-5m', upTo: 300 },
  { label: '5-15m', upTo: 900 },
  { label: '15m-1h', upTo: 3600 },
  { label: '1h+', upTo: Infinity },
] as const
export type AgeCounts = number[] & { never?: number }

export interface FleetCensus {
  states: Record<(typeof NODE_STATES)[number], number>
  compatibility: Record<(typeof COMPATIBILITIES)[number], number>
  /** One count per AGE_BUCKETS entry, then `never`. */
  ages: readonly number[]
  never: number
}

export const ENROLL_OUTCOMES = ['enrolled', 'refused', 'worker-newer', 'invalid', 'rate-limited', 'node-exists', 'error'] as const
export type EnrollOutcome = (typeof ENROLL_OUTCOMES)[number]

/** The outcome an enroll's answer or error stands for (the error's code, as the client sees it). */
export function enrollOutcome(e?: unknown): EnrollOutcome {
  if (e === undefined) return 'enrolled'
  const code = (e as { code?: unknown } | null)?.code
  if (code === 'enrollment-refused') return 'refused'
  if (code === 'invalid-request') return 'invalid'
  if (code === 'worker-newer' || code === 'rate-limited') return code
  if (code === 'node-exists' || code === 'certificate-in-use') return 'node-exists'
  return 'error'
}

/** An error's code as a label: a MusterError's (a fixed table), else `error`. */
export function codeOf(e: unknown): string {
  const c = (e as { code?: unknown } | null)?.code
  return typeof c === 'string' && /^[a-z][a-z-]{0,40}$/.test(c) ? c : 'error'
}

/** 0.5 ms to 10 s: a heartbeat answers in well under a millisecond, a long poll waits up to a minute (then +Inf). */
export const LATENCY_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]

export const ROLLOUT_NODE_STATES = ['pending', 'downloading', 'installing', 'restarting', 'done', 'failed', 'rolled-back', 'skipped'] as const
type RolloutCounts = Partial<Record<string, number>> | undefined

/** What the gauges read; the Platform hands it in (watch). Each part may be missing (a test's partial Platform). */
export interface PlatformSources {
  census?: () => FleetCensus
  replicas?: () => { projects: number; wanted: number; placed: number; running: number; short: number }
  platformsLive?: () => number
  leases?: () => readonly { readonly name: string; readonly held: boolean }[]
  provisions?: () => Promise<Record<string, number>>
  /** Milliseconds since the epoch. */
  trustRotationAt?: () => number | undefined
  caNotAfter?: () => number
  now?: () => number
}

/** What the store counts of itself (src/store/sql.ts takes it with `measure`). */
export type StoreMeter = Pick<PlatformMetrics, 'observeQuery' | 'storeRetries' | 'storeNotices'>

const SQLITE = { engine: 'sqlite' }
const POSTGRES = { engine: 'postgres' }

/** One Platform's families, in its own registry (GET /metrics serves `registry`). */
export class PlatformMetrics {
  readonly registry = new Registry()
  private sources: PlatformSources = {}
  private rolloutSource: (() => RolloutCounts | Promise<RolloutCounts>) | undefined
  private highestRevision = 0
  private withProcess = false
  private readonly registers = [this.registry]

  // ---- nodes
  readonly heartbeats = new Counter({ name: 'muster_heartbeats_total', help: 'Heartbeats accepted from nodes.', registers: this.registers })
  readonly heartbeatRefusals = new Counter({ name: 'muster_heartbeat_refusals_total', help: 'Heartbeat requests refused, by error code.', labelNames: ['code'], registers: this.registers })
  readonly enrollAttempts = new Counter({ name: 'muster_enroll_attempts_total', help: 'Enroll attempts by outcome.', labelNames: ['outcome'], registers: this.registers })
  readonly renewals = new Counter({ name: 'muster_renewals_total', help: 'Node credential renewals, by outcome (renewed, or the error code).', labelNames: ['outcome'], registers: this.registers })
  readonly revocations = new Counter({ name: 'muster_revocations_total', help: 'Nodes revoked by an operator.', registers: this.registers })
  // ---- HTTP
  readonly httpRequests = new Counter({ name: 'muster_http_requests_total', help: 'API requests by method, route template and status class (the heartbeat route counts in muster_heartbeats_total).', labelNames: ['method', 'route', 'code'], registers: this.registers })
  readonly httpDuration = new Histogram({ name: 'muster_http_request_duration_seconds', help: 'API request latency until the answer is ready, by method and route template.', labelNames: ['method', 'route'], buckets: LATENCY_BUCKETS, registers: this.registers })
  // ---- store
  readonly storeQueryDuration = new Histogram({
    name: 'muster_store_query_duration_seconds',
    help: 'Store statement latency by engine (SQLite: the statement itself; PostgreSQL: the round trip).',
    labelNames: ['engine'],
    buckets: [0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: this.registers,
  })
  readonly storeRetries = new Counter({ name: 'muster_store_transaction_retries_total', help: 'Transactions run again after a deadlock or serialization failure.', labelNames: ['engine'], registers: this.registers })
  readonly storeNotices = new Counter({ name: 'muster_store_notices_total', help: 'Change notices between Platforms (PostgreSQL LISTEN/NOTIFY), sent and received.', labelNames: ['direction'], registers: this.registers })
  // ---- HA
  readonly leaseChanges = new Counter({ name: 'muster_lease_changes_total', help: "This Platform's leases taken (acquired), lost to another Platform (lost) and given up at a stop (released), by lease.", labelNames: ['lease', 'change'], registers: this.registers })
  // ---- cloud
  readonly providerCalls = new Counter({ name: 'muster_cloud_provider_calls_total', help: 'Cloud provider API requests by provider and outcome (ok, throttled, transient, refused, network).', labelNames: ['provider', 'outcome'], registers: this.registers })
  readonly providerRetries = new Counter({ name: 'muster_cloud_provider_retries_total', help: 'Cloud provider API requests sent again after a throttled, transient or network failure.', labelNames: ['provider'], registers: this.registers })
  readonly autoscaleRequests = new Counter({ name: 'muster_autoscale_requests_total', help: 'Machines the autoscaler ordered for a shortfall.', registers: this.registers })
  // ---- projects
  readonly assignmentRevision = new Gauge({ name: 'muster_assignment_revision', help: 'The highest assignment revision this Platform has issued or read (it moves whenever any node is sent new work).', registers: this.registers })

  constructor() {
    for (const outcome of ENROLL_OUTCOMES) this.enrollAttempts.inc({ outcome }, 0)
    this.renewals.inc({ outcome: 'renewed' }, 0)
    this.storeRetries.inc({ engine: 'postgres' }, 0)
    for (const direction of ['sent', 'received']) this.storeNotices.inc({ direction }, 0)
    this.gauges()
  }

  /** Points the gauges at the running Platform (and turns the process metrics on); the returned function forgets it. */
  watch(s: PlatformSources): () => void {
    this.sources = s
    this.withProcess = true
    return () => {
      if (this.sources === s) this.sources = {}
    }
  }

  /** What GET /metrics serves: this Platform's families, with the process's once it runs (watch). */
  scraped(): Registry {
    return this.withProcess ? Registry.merge([this.registry, processRegistry()]) : this.registry
  }

  /**
   * Where muster_rollout_nodes reads the nodes of the rollout under way by state (a store query is fine:
   * it runs once a scrape): the rollouts service registers its counts here in one line; until one does,
   * every state reads 0. The returned function forgets the source.
   */
  reportRolloutNodes(source: () => RolloutCounts | Promise<RolloutCounts>): () => void {
    this.rolloutSource = source
    return () => {
      if (this.rolloutSource === source) this.rolloutSource = undefined
    }
  }

  /** Counts one enroll by what it came to, and passes the answer (or the error) on. */
  countEnroll<T>(attempt: Promise<T>): Promise<T> {
    return attempt.then(
      (answer) => (this.enrollAttempts.inc({ outcome: 'enrolled' }), answer),
      (e: unknown) => {
        this.enrollAttempts.inc({ outcome: enrollOutcome(e) })
        throw e
      },
    )
  }

  /** Counts a renewal by what it came to, and passes the answer (or the error) on. */
  countRenewal<T>(attempt: Promise<T>): Promise<T> {
    return attempt.then(
      (answer) => (this.renewals.inc({ outcome: 'renewed' }), answer),
      (e: unknown) => {
        this.renewals.inc({ outcome: codeOf(e) })
        throw e
      },
    )
  }

  /** Counts a heartbeat refused by its error code, and passes the error on (the framework's heartbeat route). */
  countHeartbeatRefusal<T>(attempt: Promise<T>): Promise<T> {
    return attempt.catch((e: unknown) => {
      this.heartbeatRefusals.inc({ code: codeOf(e) })
      throw e
    })
  }

  /** One statement on `engine` that started at `started` (performance.now()) is done. */
  observeQuery(engine: 'sqlite' | 'postgres', started: number): void {
    this.storeQueryDuration.observe(engine === 'sqlite' ? SQLITE : POSTGRES, (performance.now() - started) / 1000)
  }

  /** A lease this Platform may hold: its changes start at 0, so the first loss is an increase Prometheus sees. */
  countsLease(lease: string): void {
    for (const change of ['acquired', 'lost', 'released']) this.leaseChanges.inc({ lease, change }, 0)
  }

  /** A node's assignment revision was issued or read: muster_assignment_revision follows the highest. */
  noteAssignmentRevision(revision: number): void {
    if (revision <= this.highestRevision) return
    this.highestRevision = revision
    this.assignmentRevision.set(revision)
  }

  // ---- gauges, read from the Platform at scrape time ------------------------------------

  private gauges(): void {
    const registers = this.registers
    const src = () => this.sources
    const gauge = (name: string, help: string, labelNames: string[], collect: (g: Gauge) => void | Promise<void>) =>
      new Gauge({
        name,
        help,
        labelNames,
        registers,
        async collect() {
          this.reset()
          try {
            await collect(this)
          } catch {
            // A source that cannot answer now (the store, mid-failover): the family is empty this scrape, the rest answer.
            this.reset()
          }
        },
      })
    gauge('muster_nodes', 'Registered nodes by state (the state `nodes list` shows).', ['state'], (g) => {
      const c = src().census?.()
      if (c) for (const state of NODE_STATES) g.set({ state }, c.states[state])
    })
    gauge('muster_nodes_by_compatibility', "Registered nodes by their version against this Platform's.", ['compatibility'], (g) => {
      const c = src().census?.()
      if (c) for (const compatibility of COMPATIBILITIES) g.set({ compatibility }, c.compatibility[compatibility])
    })
    gauge('muster_nodes_by_heartbeat_age', "Registered nodes by the age of their last heartbeat (non-cumulative buckets; `never`: none yet).", ['age'], (g) => {
      const c = src().census?.()
      if (!c) return
      AGE_BUCKETS.forEach((b, i) => g.set({ age: b.label }, c.ages[i] ?? 0))
      g.set({ age: 'never' }, c.never)
    })
    gauge('muster_project_replicas', 'Replicas over all projects: wanted, placed on a node, running there, and short (fitting nowhere).', ['state'], (g) => {
      const r = src().replicas?.()
      if (r) for (const state of ['wanted', 'placed', 'running', 'short'] as const) g.set({ state }, r[state])
    })
    gauge('muster_projects', 'Projects deployed.', [], (g) => {
      const r = src().replicas?.()
      if (r) g.set(r.projects)
    })
    gauge('muster_platforms_live', 'Platforms live on this store (this one included).', [], (g) => {
      const n = src().platformsLive?.()
      if (n !== undefined) g.set(n)
    })
    gauge('muster_leases_held', 'Whether this Platform holds each lease (1) or not (0): which background loops it runs.', ['lease'], (g) => {
      for (const l of src().leases?.() ?? []) g.set({ lease: l.name }, l.held ? 1 : 0)
    })
    gauge('muster_cloud_provisions', 'Cloud provisions by state.', ['state'], async (g) => {
      const by = await src().provisions?.().catch(() => undefined)
      for (const [state, n] of Object.entries(by ?? {})) g.set({ state }, n)
    })
    gauge('muster_trust_key_rotation_seconds', 'Seconds until the signing trust key hands over to its successor (negative: overdue).', [], (g) => {
      const s = src()
      const at = s.trustRotationAt?.()
      if (at !== undefined) g.set((at - (s.now ?? Date.now)()) / 1000)
    })
    gauge('muster_ca_expiry_seconds', 'Seconds until the Platform CA certificate expires (negative: expired).', [], (g) => {
      const s = src()
      const at = s.caNotAfter?.()
      if (at !== undefined) g.set((at - (s.now ?? Date.now)()) / 1000)
    })
    gauge('muster_rollout_nodes', 'Nodes of the rollout under way by rollout state (all 0 when none is).', ['state'], async (g) => {
      const by = (await this.rolloutSource?.()) ?? {}
      for (const state of ROLLOUT_NODE_STATES) g.set({ state }, by[state] ?? 0)
    })
  }
}
