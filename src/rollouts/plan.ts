// A rollout's plan and its next step (docs/upgrading.md "Rollouts"), as pure
// functions of what the store holds, so every Platform sharing it computes the
// same and a restart carries on where it was:
// - the order: canaries first — by default the first node (by name) of each
//   distinct (architecture, labels) group, at least one — then the rest by name;
//   a node that joins later goes after them;
// - what a node starts as: already on the release (done), or not able to take
//   it (skipped, with the reason), or pending;
// - whom to tell now: never more than max-unavailable nodes between "told" and
//   "finished", canaries before anyone else, the soak after the canaries.
import type { Labels } from '../wire/labels.ts'
import type { NodeAgentRow, ReleaseRow } from '../store/releases.ts'
import { FINISHED, IN_FLIGHT, type RolloutNodeRow, type RolloutNodeState, type RolloutRow, type RolloutSummaryRows } from '../store/rollouts.ts'

export interface Candidate {
  name: string
  labels: Labels
  agent: NodeAgentRow | null
}

export const groupOf = (arch: string | null, labels: Labels): string => {
  const l = Object.entries(labels)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([k, v]) => `${k}=${v}`)
    .join(',')
  return `${arch ?? 'unknown'}${l ? ` ${l}` : ''}`
}

const byName = (a: { name: string }, b: { name: string }) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)

/** How a node starts in a rollout to the releases `byArch` (one per architecture). */
export function initialState(c: Candidate, version: string, byArch: Map<string, ReleaseRow>): { state: RolloutNodeState; error: string | null; release: ReleaseRow | null } {
  const a = c.agent
  if (!a) return { state: 'skipped', error: 'its Agent does not update itself (a version from before rollouts): update it once with install.sh', release: null }
  const r = byArch.get(a.arch)
  if (!r) return { state: 'skipped', error: `no release of ${version} for ${a.arch}: muster releases add a build for it`, release: null }
  if (a.binary_sha256 === r.sha256) return { state: 'done', error: null, release: r }
  let skipped: string[] = []
  try {
    skipped = JSON.parse(a.skipped) as string[]
  } catch {}
  if (skipped.includes(r.sha256)) return { state: 'skipped', error: `it rolled ${version} back before; release it again to retry`, release: r }
  if (a.sequence > r.sequence) return { state: 'skipped', error: `it runs a newer release (sequence ${a.sequence} > ${r.sequence})`, release: r }
  return { state: 'pending', error: null, release: r }
}

/** The rows of a new rollout: canaries first, then the rest, each with its starting state. */
export function planRollout(id: string, version: string, cands: Candidate[], byArch: Map<string, ReleaseRow>, canaries: number | null, now: number): RolloutNodeRow[] {
  const rows = [...cands].sort(byName).map((c) => {
    const s = initialState(c, version, byArch)
    const row: RolloutNodeRow = {
      rollout_id: id, name: c.name, position: 0, canary: 0, grp: groupOf(c.agent?.arch ?? null, c.labels), arch: c.agent?.arch ?? null, state: s.state,
      from_version: c.agent?.version ?? null, to_version: s.state === 'done' ? version : null, release_sha256: s.release?.sha256 ?? null, error: s.error, told_at: null, updated_at: now,
    }
    return row
  })
  // Canaries: round robin over the groups (in group order), the first pending nodes of each.
  const groups = new Map<string, RolloutNodeRow[]>()
  for (const r of rows) if (r.state === 'pending') groups.set(r.grp, [...(groups.get(r.grp) ?? []), r])
  const keys = [...groups.keys()].sort()
  const want = canaries ?? keys.length
  const picked: RolloutNodeRow[] = []
  for (let round = 0; picked.length < want; round++) {
    let any = false
    for (const k of keys) {
      const r = groups.get(k)![round]
      if (!r || picked.length >= want) continue
      picked.push(r)
      any = true
    }
    if (!any) break
  }
  for (const r of picked) r.canary = 1
  const rest = rows.filter((r) => r.canary === 0)
  return [...picked, ...rest].map((r, i) => ({ ...r, position: i }))
}

/** max-unavailable as a number of nodes: "N", or "P%" of the rollout's nodes, at least one. */
export function unavailableBudget(spec: string, total: number): number {
  const pct = /^(\d+(?:\.\d+)?)%$/.exec(spec)
  const n = pct ? Math.floor((Number(pct[1]) * total) / 100) : Number(spec)
  return Math.max(1, Number.isFinite(n) ? n : 1)
}

export type Step =
  | { kind: 'halt'; reason: string }
  | { kind: 'done'; reason: string | null }
  /** Tell `names` (canaries), or the first `room` pending nodes in order (`names` null). */
  | { kind: 'tell'; names: string[] | null; room: number; canariesDone: boolean }
  | { kind: 'wait'; canariesDone: boolean }

const failed = (r: RolloutNodeRow) => r.state === 'failed' || r.state === 'rolled-back'

/** What the store's summary query gives, made from rows (tests, and anything holding the rows already). */
export function summarize(rows: RolloutNodeRow[]): RolloutSummaryRows {
  const counts: Partial<Record<RolloutNodeState, number>> = {}
  for (const n of rows) counts[n.state] = (counts[n.state] ?? 0) + 1
  const failures = rows.filter(failed).sort((a, b) => b.updated_at - a.updated_at || b.position - a.position)
  return { total: rows.length, counts, canaries: rows.filter((n) => n.canary === 1), lastFailure: failures[0] ?? null }
}

const sum = (c: RolloutSummaryRows['counts'], states: readonly RolloutNodeState[]) => states.reduce((n, st) => n + (c[st] ?? 0), 0)

/** What the rollout does next, from its summary at `now`. */
export function nextStep(r: RolloutRow, s: RolloutSummaryRows, now: number): Step {
  const canaryFailure = s.canaries.find(failed)
  if (canaryFailure && r.failures_forgiven === 0) return { kind: 'halt', reason: `canary ${canaryFailure.name} ${canaryFailure.state}: ${canaryFailure.error ?? 'no reason given'}` }
  const failures = sum(s.counts, ['failed', 'rolled-back'])
  if (failures - r.failures_forgiven > r.max_failures) {
    const last = s.lastFailure
    const since = r.failures_forgiven > 0 ? ' since the rollout was resumed' : ''
    return { kind: 'halt', reason: `${failures - r.failures_forgiven} node(s) failed${since}, more than the ${r.max_failures} allowed (last: ${last ? `${last.name} ${last.state}: ${last.error ?? 'no reason given'}` : '?'})` }
  }
  const pendingCanaries = s.canaries.filter((n) => !FINISHED.includes(n.state))
  const canariesDone = pendingCanaries.length === 0
  if (sum(s.counts, FINISHED) === s.total) {
    const skipped = s.counts.skipped ?? 0
    return { kind: 'done', reason: failures || skipped ? `${s.counts.done ?? 0} done, ${failures} failed or rolled back, ${skipped} skipped` : null }
  }
  if (r.state !== 'running') return { kind: 'wait', canariesDone }
  const room = unavailableBudget(r.max_unavailable, s.total) - sum(s.counts, IN_FLIGHT)
  if (room <= 0) return { kind: 'wait', canariesDone }
  if (!canariesDone) {
    const names = pendingCanaries.filter((n) => n.state === 'pending').slice(0, room).map((n) => n.name)
    return names.length > 0 ? { kind: 'tell', names, room, canariesDone } : { kind: 'wait', canariesDone }
  }
  if (r.canaries_done_at !== null && now < r.canaries_done_at + r.soak_ms) return { kind: 'wait', canariesDone }
  if (r.canaries_done_at === null && r.soak_ms > 0 && s.canaries.length > 0) return { kind: 'wait', canariesDone }
  return (s.counts.pending ?? 0) > 0 ? { kind: 'tell', names: null, room, canariesDone } : { kind: 'wait', canariesDone }
}
