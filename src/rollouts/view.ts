// A rollout as operators see it (the wire's RolloutView): counts by state, progress per
// (architecture, labels) group, the nodes in the order of the plan.
import type { RolloutNodeRow, RolloutRow } from '../store/rollouts.ts'
import { ReleaseState, type RolloutNodeStateName, type RolloutView } from '../wire/rollouts.ts'
import { unavailableBudget } from './plan.ts'

const emptyCounts = (): Record<RolloutNodeStateName, number> => Object.fromEntries(ReleaseState.map((s) => [s, 0])) as Record<RolloutNodeStateName, number>

export function selectorOf(r: RolloutRow): string[] {
  try {
    return r.selector ? (JSON.parse(r.selector) as string[]) : []
  } catch {
    return []
  }
}

/** Counts of nodes by (group, state), as the store's GROUP BY gives them. */
export type GroupCounts = { grp: string; state: RolloutNodeStateName; n: number }[]

export function rolloutSummary(r: RolloutRow, byGroup: GroupCounts): Omit<RolloutView, 'nodes' | 'groups'> {
  const counts = emptyCounts()
  let total = 0
  for (const g of byGroup) {
    counts[g.state] += g.n
    total += g.n
  }
  return {
    id: r.id, version: r.version, state: r.state, reason: r.reason, selector: selectorOf(r), canaries: r.canaries, maxUnavailable: r.max_unavailable,
    maxUnavailableNodes: unavailableBudget(r.max_unavailable, total), maxFailures: r.max_failures, soakSeconds: Math.round(r.soak_ms / 1000), healthTimeoutSeconds: Math.round(r.health_timeout_ms / 1000),
    createdAt: new Date(r.created_at).toISOString(), createdBy: r.created_by, updatedAt: new Date(r.updated_at).toISOString(), total, counts,
  }
}

/** The rollout with its groups and `rows` (every node, or those worth a look) in the plan's order. */
export function rolloutView(r: RolloutRow, byGroup: GroupCounts, rows: RolloutNodeRow[]): RolloutView {
  const groups = new Map<string, { total: number; counts: Record<RolloutNodeStateName, number> }>()
  for (const c of byGroup) {
    const g = groups.get(c.grp) ?? { total: 0, counts: emptyCounts() }
    g.total += c.n
    g.counts[c.state] += c.n
    groups.set(c.grp, g)
  }
  return {
    ...rolloutSummary(r, byGroup),
    groups: [...groups].sort(([a], [b]) => (a < b ? -1 : 1)).map(([group, g]) => ({ group, ...g })),
    nodes: rows.map((n) => ({ name: n.name, state: n.state, from: n.from_version, to: n.to_version, error: n.error, canary: n.canary === 1, group: n.grp, updatedAt: new Date(n.updated_at).toISOString() })),
  }
}

