// The Agent's metric families (docs/monitoring.md), served on request of a
// local scrape (`muster agent --metrics-address 127.0.0.1:PORT`). Counters are
// incremented in one line where the event happens; gauges read the running
// Agent (watchAgent) at scrape time. No label carries a name, a token or an
// address. Like src/metrics/platform.ts, this imports nothing of muster.
import { Counter, Gauge, Registry } from 'prom-client'
import { withProcessMetrics } from './process.ts'

export const agentRegistry = new Registry()
const registers = [agentRegistry]

export const agentHeartbeats = new Counter({ name: 'muster_agent_heartbeats_total', help: 'Heartbeats sent to the Platform, by outcome (ok, failed).', labelNames: ['outcome'], registers })
for (const outcome of ['ok', 'failed']) agentHeartbeats.inc({ outcome }, 0)
export const agentRenewals = new Counter({ name: 'muster_agent_renewals_total', help: 'Node credential renewals, by outcome (ok, failed).', labelNames: ['outcome'], registers })
for (const outcome of ['ok', 'failed']) agentRenewals.inc({ outcome }, 0)
export const replicaRestarts = new Counter({ name: 'muster_agent_replica_restarts_total', help: 'Replicas restarted after they exited.', registers })

export const REPLICA_STATES = ['pending', 'running', 'failed', 'stopped'] as const
/** The rollout states a node goes through (docs/monitoring.md); `none`: no rollout reached this node. */
export const AGENT_ROLLOUT_STATES = ['none', 'pending', 'downloading', 'installing', 'restarting', 'done', 'failed', 'rolled-back', 'skipped'] as const

export interface AgentSources {
  /** Heartbeats failed in a row since the last success. */
  failures: () => number
  /** The wait (ms) before the next heartbeat after failures; 0 while they succeed. */
  backoffMs: () => number
  replicas: () => readonly { readonly state: string }[]
  /** The trust keys held: when each starts (ISO). */
  trustKeys: () => readonly { readonly notBefore: string }[]
  /** When the trust keys were last refreshed from a Platform (ms), if since this Agent started. */
  trustRefreshedAt: () => number | undefined
  /** The state the Platform last reported for this node. */
  state: () => string | undefined
  now: () => number
}

let sources: AgentSources | undefined
let rolloutState: (() => string | undefined) | undefined

/** Points the gauges at a running Agent (and turns the process metrics on); the returned function forgets it. */
export function watchAgent(s: AgentSources): () => void {
  sources = s
  withProcessMetrics(agentRegistry)
  return () => {
    if (sources === s) sources = undefined
  }
}

/** Where muster_agent_rollout_state reads this node's rollout state: the node's rollout code registers it (one line); until then it reads `none`. */
export function reportAgentRollout(state: () => string | undefined): void {
  rolloutState = state
}

const gauge = (name: string, help: string, labelNames: string[], collect: (g: Gauge, s: AgentSources) => void) =>
  new Gauge({
    name,
    help,
    labelNames,
    registers,
    collect() {
      this.reset()
      if (sources) collect(this, sources)
    },
  })

gauge('muster_agent_consecutive_failures', 'Heartbeats failed in a row (0 once one succeeds).', [], (g, s) => g.set(s.failures()))
gauge('muster_agent_backoff_seconds', 'The wait before the next heartbeat after failed ones (0 while heartbeats succeed).', [], (g, s) => g.set(s.backoffMs() / 1000))
gauge('muster_agent_replicas', "This node's replicas by state.", ['state'], (g, s) => {
  const by: Record<string, number> = Object.fromEntries(REPLICA_STATES.map((st) => [st, 0]))
  for (const r of s.replicas()) if (r.state in by) by[r.state]!++
  for (const [state, n] of Object.entries(by)) g.set({ state }, n)
})
gauge('muster_agent_trust_key_age_seconds', 'Seconds since the newest trust key this node holds became valid (-1: none held).', [], (g, s) => {
  const now = s.now()
  const started = s.trustKeys().map((k) => Date.parse(k.notBefore)).filter((t) => t <= now)
  g.set(started.length ? (now - Math.max(...started)) / 1000 : -1)
})
gauge('muster_agent_trust_refresh_age_seconds', 'Seconds since the trust keys were last refreshed from a Platform (-1: not since this Agent started).', [], (g, s) => {
  const at = s.trustRefreshedAt()
  g.set(at === undefined ? -1 : (s.now() - at) / 1000)
})
gauge('muster_agent_node_state', 'The state the Platform last reported for this node (1 for that state).', ['state'], (g, s) => {
  for (const state of ['enrolled', 'ready', 'unreachable', 'revoked']) g.set({ state }, s.state() === state ? 1 : 0)
})
gauge('muster_agent_rollout_state', "This node's state in a rollout (1 for that state; `none` until a rollout reaches it).", ['state'], (g) => {
  const current = rolloutState?.() ?? 'none'
  for (const state of AGENT_ROLLOUT_STATES) g.set({ state }, state === current ? 1 : 0)
})
