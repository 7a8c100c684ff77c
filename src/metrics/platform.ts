// The Platform's metric families (docs/monitoring.md lists them with their
// meaning). Counters are module values that the code counting an event
// increments in one line; gauges are read at scrape time from what the
// Platform already keeps (counts, not walks: a scrape of a million-node
// fleet reads a handful of numbers). Label values come from fixed sets or
// from the code's own constants (route templates, lease names, provider
// names, error codes), never from a node name, a token or an address.
//
// This module imports nothing of muster: every part of the Platform may
// count here without an import circle. What the gauges read is handed in by
// the Platform (watchPlatform) as the small interfaces below.
import { Counter, Gauge, Histogram, Registry } from 'prom-client'
import { withProcessMetrics } from './process.ts'

/** Every Platform family, in one registry per process (a process runs one Platform). */
export const platformRegistry = new Registry()
const registers = [platformRegistry]

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

export const heartbeats = new Counter({ name: 'muster_heartbeats_total', help: 'Heartbeats accepted from nodes.', registers })
export const heartbeatRefusals = new Counter({ name: 'muster_heartbeat_refusals_total', help: 'Heartbeat requests refused, by error code.', labelNames: ['code'], registers })

export const ENROLL_OUTCOMES = ['enrolled', 'refused', 'worker-newer', 'invalid', 'rate-limited', 'node-exists', 'error'] as const
export type EnrollOutcome = (typeof ENROLL_OUTCOMES)[number]
export const enrollAttempts = new Counter({ name: 'muster_enroll_attempts_total', help: 'Enroll attempts by outcome.', labelNames: ['outcome'], registers })
for (const outcome of ENROLL_OUTCOMES) enrollAttempts.inc({ outcome }, 0)

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

/** Counts one enroll by what it came to, and passes the answer (or the error) on. */
export function countEnroll<T>(attempt: Promise<T>): Promise<T> {
  return attempt.then(
    (answer) => (enrollAttempts.inc({ outcome: 'enrolled' }), answer),
    (e: unknown) => {
      enrollAttempts.inc({ outcome: enrollOutcome(e) })
      throw e
    },
  )
}

/** An error's code as a label: a MusterError's (a fixed table), else `error`. */
export function codeOf(e: unknown): string {
  const c = (e as { code?: unknown } | null)?.code
  return typeof c === 'string' && /^[a-z][a-z-]{0,40}$/.test(c) ? c : 'error'
}

/** Counts a renewal by what it came to, and passes the answer (or the error) on. */
export function countRenewal<T>(attempt: Promise<T>): Promise<T> {
  return attempt.then(
    (answer) => (renewals.inc({ outcome: 'renewed' }), answer),
    (e: unknown) => {
      renewals.inc({ outcome: codeOf(e) })
      throw e
    },
  )
}

/** Counts a heartbeat refused by its error code, and passes the error on (the framework's heartbeat route). */
export function countHeartbeatRefusal<T>(attempt: Promise<T>): Promise<T> {
  return attempt.catch((e: unknown) => {
    heartbeatRefusals.inc({ code: codeOf(e) })
    throw e
  })
}

export const renewals = new Counter({ name: 'muster_renewals_total', help: 'Node credential renewals, by outcome (renewed, or the error code).', labelNames: ['outcome'], registers })
renewals.inc({ outcome: 'renewed' }, 0)
export const revocations = new Counter({ name: 'muster_revocations_total', help: 'Nodes revoked by an operator.', registers })

// ---- HTTP ---------------------------------------------------------------------------

/** 0.5 ms to 10 s: a heartbeat answers in well under a millisecond, a long poll waits up to a minute (then +Inf). */
export const LATENCY_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]
export const httpRequests = new Counter({ name: 'muster_http_requests_total', help: 'API requests by method, route template and status class (the heartbeat route counts in muster_heartbeats_total).', labelNames: ['method', 'route', 'code'], registers })
export const httpDuration = new Histogram({ name: 'muster_http_request_duration_seconds', help: 'API request latency until the answer is ready, by method and route template.', labelNames: ['method', 'route'], buckets: LATENCY_BUCKETS, registers })

// ---- store --------------------------------------------------------------------------

export const storeQueryDuration = new Histogram({
  name: 'muster_store_query_duration_seconds',
  help: 'Store statement latency by engine (SQLite: the statement itself; PostgreSQL: the round trip).',
  labelNames: ['engine'],
  buckets: [0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
  registers,
})
export const storeRetries = new Counter({ name: 'muster_store_transaction_retries_total', help: 'Transactions run again after a deadlock or serialization failure.', labelNames: ['engine'], registers })
export const storeNotices = new Counter({ name: 'muster_store_notices_total', help: 'Change notices between Platforms (PostgreSQL LISTEN/NOTIFY), sent and received.', labelNames: ['direction'], registers })
storeRetries.inc({ engine: 'postgres' }, 0)
for (const direction of ['sent', 'received']) storeNotices.inc({ direction }, 0)

/** One statement on `engine` that started at `started` (performance.now()) is done. */
export function observeQuery(engine: 'sqlite' | 'postgres', started: number): void {
  storeQueryDuration.observe(engine === 'sqlite' ? SQLITE : POSTGRES, (performance.now() - started) / 1000)
}
const SQLITE = { engine: 'sqlite' }
const POSTGRES = { engine: 'postgres' }

// ---- HA -----------------------------------------------------------------------------

export const leaseChanges = new Counter({ name: 'muster_lease_changes_total', help: "This Platform's leases taken (acquired), lost to another Platform (lost) and given up at a stop (released), by lease.", labelNames: ['lease', 'change'], registers })
/** A lease this Platform may hold: its changes start at 0, so the first loss is an increase Prometheus sees. */
export function countsLease(lease: string): void {
  for (const change of ['acquired', 'lost', 'released']) leaseChanges.inc({ lease, change }, 0)
}

// ---- cloud --------------------------------------------------------------------------

export const providerCalls = new Counter({ name: 'muster_cloud_provider_calls_total', help: 'Cloud provider API requests by provider and outcome (ok, throttled, transient, refused, network).', labelNames: ['provider', 'outcome'], registers })
export const providerRetries = new Counter({ name: 'muster_cloud_provider_retries_total', help: 'Cloud provider API requests sent again after a throttled, transient or network failure.', labelNames: ['provider'], registers })
export const autoscaleRequests = new Counter({ name: 'muster_autoscale_requests_total', help: 'Machines the autoscaler ordered for a shortfall.', registers })

// ---- gauges, read from the Platform at scrape time ------------------------------------

/** What the gauges read; the Platform hands it in (watchPlatform). Each part may be missing (a test's partial Platform). */
export interface PlatformSources {
  census?: () => FleetCensus
  replicas?: () => { projects: number; wanted: number; placed: number; running: number; short: number }
  platformsLive?: () => number
  leases?: () => readonly { readonly name: string; readonly held: boolean }[]
  provisions?: () => Promise<Record<string, number>>
  /** Milliseconds since the epoch. */
  trustRotationAt?: () => number | undefined
  caNotAfter?: () => number
  rolloutNodes?: () => Record<string, number> | undefined
  now?: () => number
}

let sources: PlatformSources = {}

/** Points the gauges at a running Platform (and turns the process metrics on); the returned function forgets it. */
export function watchPlatform(s: PlatformSources): () => void {
  sources = s
  withProcessMetrics(platformRegistry)
  return () => {
    if (sources === s) sources = {}
  }
}

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
  const c = sources.census?.()
  if (c) for (const state of NODE_STATES) g.set({ state }, c.states[state])
})
gauge('muster_nodes_by_compatibility', "Registered nodes by their version against this Platform's.", ['compatibility'], (g) => {
  const c = sources.census?.()
  if (c) for (const compatibility of COMPATIBILITIES) g.set({ compatibility }, c.compatibility[compatibility])
})
gauge('muster_nodes_by_heartbeat_age', "Registered nodes by the age of their last heartbeat (non-cumulative buckets; `never`: none yet).", ['age'], (g) => {
  const c = sources.census?.()
  if (!c) return
  AGE_BUCKETS.forEach((b, i) => g.set({ age: b.label }, c.ages[i] ?? 0))
  g.set({ age: 'never' }, c.never)
})
gauge('muster_project_replicas', 'Replicas over all projects: wanted, placed on a node, running there, and short (fitting nowhere).', ['state'], (g) => {
  const r = sources.replicas?.()
  if (r) for (const state of ['wanted', 'placed', 'running', 'short'] as const) g.set({ state }, r[state])
})
gauge('muster_projects', 'Projects deployed.', [], (g) => {
  const r = sources.replicas?.()
  if (r) g.set(r.projects)
})
export const assignmentRevision = new Gauge({ name: 'muster_assignment_revision', help: 'The highest assignment revision this Platform has issued or read (it moves whenever any node is sent new work).', registers })
gauge('muster_platforms_live', 'Platforms live on this store (this one included).', [], (g) => {
  const n = sources.platformsLive?.()
  if (n !== undefined) g.set(n)
})
gauge('muster_leases_held', 'Whether this Platform holds each lease (1) or not (0): which background loops it runs.', ['lease'], (g) => {
  for (const l of sources.leases?.() ?? []) g.set({ lease: l.name }, l.held ? 1 : 0)
})
gauge('muster_cloud_provisions', 'Cloud provisions by state.', ['state'], async (g) => {
  const by = await sources.provisions?.().catch(() => undefined)
  for (const [state, n] of Object.entries(by ?? {})) g.set({ state }, n)
})
gauge('muster_trust_key_rotation_seconds', 'Seconds until the signing trust key hands over to its successor (negative: overdue).', [], (g) => {
  const at = sources.trustRotationAt?.()
  if (at !== undefined) g.set((at - (sources.now ?? Date.now)()) / 1000)
})
gauge('muster_ca_expiry_seconds', 'Seconds until the Platform CA certificate expires (negative: expired).', [], (g) => {
  const at = sources.caNotAfter?.()
  if (at !== undefined) g.set((at - (sources.now ?? Date.now)()) / 1000)
})

export const ROLLOUT_NODE_STATES = ['pending', 'downloading', 'installing', 'restarting', 'done', 'failed', 'rolled-back', 'skipped'] as const
type RolloutCounts = Record<string, number> | undefined
let rolloutSource: (() => RolloutCounts | Promise<RolloutCounts>) | undefined
/**
 * Where muster_rollout_nodes reads the nodes of the rollouts under way by state (a store query is fine:
 * it runs once a scrape): the rollouts service registers its counts here in one line,
 * `ctx.onClose(reportRolloutNodes(() => …))`; until one does, every state reads 0.
 */
export function reportRolloutNodes(source: () => RolloutCounts | Promise<RolloutCounts>): () => void {
  rolloutSource = source
  return () => {
    if (rolloutSource === source) rolloutSource = undefined
  }
}
gauge('muster_rollout_nodes', 'Nodes of the rollouts under way by rollout state.', ['state'], async (g) => {
  const by = (await (rolloutSource ?? sources.rolloutNodes)?.()) ?? {}
  for (const state of ROLLOUT_NODE_STATES) g.set({ state }, by[state] ?? 0)
})

let highestRevision = 0
/** A node's assignment revision was issued or read: muster_assignment_revision follows the highest. */
export function noteAssignmentRevision(revision: number): void {
  if (revision <= highestRevision) return
  highestRevision = revision
  assignmentRevision.set(revision)
}
