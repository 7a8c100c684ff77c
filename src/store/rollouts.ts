// The rollout tables (docs/upgrading.md): one row per rollout — `active` is 1
// while it runs, is paused or halted, and UNIQUE, so two Platforms starting a
// rollout at once cannot both succeed — and one row per node in the order
// decided at the start, which every Platform sharing the store reads alike.
import type { Db } from './db.ts'

export type RolloutState = 'running' | 'paused' | 'halted' | 'done' | 'cancelled'
export type RolloutNodeState = 'pending' | 'downloading' | 'installing' | 'restarting' | 'done' | 'failed' | 'rolled-back' | 'skipped'

export const IN_FLIGHT: readonly RolloutNodeState[] = ['downloading', 'installing', 'restarting']
export const FINISHED: readonly RolloutNodeState[] = ['done', 'failed', 'rolled-back', 'skipped']

export interface RolloutRow {
  id: string
  version: string
  selector: string | null
  canaries: number | null
  max_unavailable: string
  max_failures: number
  soak_ms: number
  health_timeout_ms: number
  state: RolloutState
  reason: string | null
  active: number | null
  failures_forgiven: number
  canaries_done_at: number | null
  created_at: number
  created_by: string
  updated_at: number
}

export interface RolloutNodeRow {
  rollout_id: string
  name: string
  position: number
  canary: number
  grp: string
  arch: string | null
  state: RolloutNodeState
  from_version: string | null
  to_version: string | null
  release_sha256: string | null
  error: string | null
  told_at: number | null
  updated_at: number
}

/** Inserts a rollout and its nodes in one transaction; false when another rollout is active. */
export async function insertRollout(db: Db, r: RolloutRow, nodes: RolloutNodeRow[]): Promise<boolean> {
  try {
    await db.tx(async (t) => {
      await t.run(
        `INSERT INTO rollouts (id, version, selector, canaries, max_unavailable, max_failures, soak_ms, health_timeout_ms, state, reason, active, failures_forgiven, canaries_done_at, created_at, created_by, updated_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)`,
        r.id, r.version, r.selector, r.canaries, r.max_unavailable, r.max_failures, r.soak_ms, r.health_timeout_ms, r.state, r.reason, r.active, r.failures_forgiven, r.canaries_done_at, r.created_at, r.created_by, r.updated_at,
      )
      for (const n of nodes) await insertRolloutNode(t, n)
    })
    return true
  } catch (e) {
    const err = e as { code?: unknown; errno?: unknown }
    if (err?.errno === '23505' || (typeof err?.code === 'string' && err.code.startsWith('SQLITE_CONSTRAINT'))) return false
    throw e
  }
}

export async function insertRolloutNode(db: Db, n: RolloutNodeRow): Promise<void> {
  await db.run(
    `INSERT INTO rollout_nodes (rollout_id, name, position, canary, grp, arch, state, from_version, to_version, release_sha256, error, told_at, updated_at)
     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13) ON CONFLICT (rollout_id, name) DO NOTHING`,
    n.rollout_id, n.name, n.position, n.canary, n.grp, n.arch, n.state, n.from_version, n.to_version, n.release_sha256, n.error, n.told_at, n.updated_at,
  )
}

export async function activeRollout(db: Db): Promise<RolloutRow | null> {
  return db.get<RolloutRow>('SELECT * FROM rollouts WHERE active = 1')
}

export async function rolloutById(db: Db, id: string): Promise<RolloutRow | null> {
  return db.get<RolloutRow>('SELECT * FROM rollouts WHERE id = ?1', id)
}

export async function latestRollout(db: Db): Promise<RolloutRow | null> {
  return db.get<RolloutRow>('SELECT * FROM rollouts ORDER BY created_at DESC, id DESC LIMIT 1')
}

export async function recentRollouts(db: Db, limit: number): Promise<RolloutRow[]> {
  return db.all<RolloutRow>('SELECT * FROM rollouts ORDER BY created_at DESC, id DESC LIMIT ?1', limit)
}

export async function rolloutNodes(db: Db, id: string): Promise<RolloutNodeRow[]> {
  return db.all<RolloutNodeRow>('SELECT * FROM rollout_nodes WHERE rollout_id = ?1 ORDER BY position', id)
}

export async function rolloutNode(db: Db, id: string, name: string): Promise<RolloutNodeRow | null> {
  return db.get<RolloutNodeRow>('SELECT * FROM rollout_nodes WHERE rollout_id = ?1 AND name = ?2', id, name)
}

/** Names in the given states of one rollout. */
export async function rolloutNodesIn(db: Db, id: string, states: readonly RolloutNodeState[]): Promise<RolloutNodeRow[]> {
  return db.all<RolloutNodeRow>(`SELECT * FROM rollout_nodes WHERE rollout_id = ?1 AND state IN (${states.map((s) => `'${s}'`).join(', ')}) ORDER BY position`, id)
}

/**
 * Moves a node from one of `from` to `to` (compare-and-set); false when it
 * was in none of them. `told`: the node was told now (told_at is set).
 */
export async function moveRolloutNode(db: Db, id: string, name: string, from: readonly RolloutNodeState[], to: RolloutNodeState, f: { error?: string | null; now: number; told?: boolean; toVersion?: string | null }): Promise<boolean> {
  return (
    (await db.run(
      `UPDATE rollout_nodes SET state = ?3, error = ?4, updated_at = ?5, told_at = CASE WHEN ?6 = 1 THEN ?5 ELSE told_at END, to_version = COALESCE(?7, to_version)
        WHERE rollout_id = ?1 AND name = ?2 AND state IN (${from.map((s) => `'${s}'`).join(', ')})`,
      id, name, to, f.error ?? null, f.now, f.told ? 1 : 0, f.toVersion ?? null,
    )) === 1
  )
}

/** Sets the rollout's state (compare-and-set on the states it may come from); `active` follows the state. */
export async function setRolloutState(db: Db, id: string, from: readonly RolloutState[], to: RolloutState, f: { reason?: string | null; now: number; forgiven?: number }): Promise<boolean> {
  const active = to === 'running' || to === 'paused' || to === 'halted' ? 1 : null
  return (
    (await db.run(
      `UPDATE rollouts SET state = ?2, reason = ?3, active = ?4, updated_at = ?5, failures_forgiven = COALESCE(?6, failures_forgiven)
        WHERE id = ?1 AND state IN (${from.map((s) => `'${s}'`).join(', ')})`,
      id, to, f.reason ?? null, active, f.now, f.forgiven ?? null,
    )) === 1
  )
}

export async function markCanariesDone(db: Db, id: string, now: number): Promise<void> {
  await db.run('UPDATE rollouts SET canaries_done_at = ?2 WHERE id = ?1 AND canaries_done_at IS NULL', id, now)
}

/** What the driver needs to decide, without reading every node: counts by state, the canaries, the last failure. */
export interface RolloutSummaryRows {
  total: number
  counts: Partial<Record<RolloutNodeState, number>>
  canaries: RolloutNodeRow[]
  lastFailure: RolloutNodeRow | null
}

export async function rolloutSummaryRows(db: Db, id: string): Promise<RolloutSummaryRows> {
  const counts: Partial<Record<RolloutNodeState, number>> = {}
  let total = 0
  for (const r of await db.all<{ state: RolloutNodeState; n: number }>('SELECT state, COUNT(*) AS n FROM rollout_nodes WHERE rollout_id = ?1 GROUP BY state', id)) {
    counts[r.state] = Number(r.n)
    total += Number(r.n)
  }
  const canaries = await db.all<RolloutNodeRow>('SELECT * FROM rollout_nodes WHERE rollout_id = ?1 AND canary = 1 ORDER BY position', id)
  const lastFailure = await db.get<RolloutNodeRow>("SELECT * FROM rollout_nodes WHERE rollout_id = ?1 AND state IN ('failed', 'rolled-back') ORDER BY updated_at DESC, position DESC LIMIT 1", id)
  return { total, counts, canaries, lastFailure }
}

/** Nodes by (group, state): the progress per group without reading every node. */
export async function rolloutGroupCounts(db: Db, id: string): Promise<{ grp: string; state: RolloutNodeState; n: number }[]> {
  return (await db.all<{ grp: string; state: RolloutNodeState; n: number }>('SELECT grp, state, COUNT(*) AS n FROM rollout_nodes WHERE rollout_id = ?1 GROUP BY grp, state', id)).map((r) => ({ ...r, n: Number(r.n) }))
}

/** The nodes worth a look: canaries, those updating now, those that failed or rolled back (at most `limit`). */
export async function rolloutNodesToWatch(db: Db, id: string, limit: number): Promise<RolloutNodeRow[]> {
  return db.all<RolloutNodeRow>(`SELECT * FROM rollout_nodes WHERE rollout_id = ?1 AND (canary = 1 OR state IN ('downloading', 'installing', 'restarting', 'failed', 'rolled-back')) ORDER BY position LIMIT ${Math.floor(limit)}`, id)
}

/** The first `limit` pending nodes in the rollout's order. */
export async function pendingInOrder(db: Db, id: string, limit: number): Promise<RolloutNodeRow[]> {
  return db.all<RolloutNodeRow>(`SELECT * FROM rollout_nodes WHERE rollout_id = ?1 AND state = 'pending' ORDER BY position LIMIT ${Math.max(0, Math.floor(limit))}`, id)
}

export async function nextPosition(db: Db, id: string): Promise<number> {
  return Number((await db.get<{ m: number | null }>('SELECT MAX(position) AS m FROM rollout_nodes WHERE rollout_id = ?1', id))?.m ?? -1) + 1
}
