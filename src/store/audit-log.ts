// The audit_log table: one row per write, with who (principal and its kind),
// from where, what, on what and how it ended. Two budgets, each kept to a
// count and an age: 'actions' (what principals did and changed) and
// 'refusals' (failed logins, unauthenticated, suspended or denied attempts,
// and writes that changed nothing), so no volume of junk can push an action
// out; within a budget each principal has its share (principalShare).
import type { Db } from './db.ts'

export type AuditBudget = 'actions' | 'refusals' | 'rollouts'
/** 'rollouts': each step of a rollout (a node told, done, rolled back), so a rollout of a large fleet cannot push people's actions out. */
export const AUDIT_BUDGETS: AuditBudget[] = ['actions', 'refusals', 'rollouts']

export interface AuditLogRow {
  id: number
  at: number
  budget: AuditBudget
  principal: string
  principal_kind: string
  token_id: string | null
  source: string
  action: string
  target: string | null
  outcome: string
  detail: string | null
}

export interface AuditRetention {
  /** Entries kept per budget. */
  maxEntries: number
  /** Entries older than this are dropped (ms). */
  maxAgeMs: number
}

export const DEFAULT_AUDIT_RETENTION: AuditRetention = { maxEntries: 100_000, maxAgeMs: 365 * 86_400_000 }

/**
 * Each principal's share of a budget: once the budget is full, the writer's own oldest entry goes first
 * while the writer holds more than this. One principal (a viewer minting tokens, a script logging out in a
 * loop) can then push out at most this many entries of everyone else, however long it goes on.
 */
export function principalShare(keep: AuditRetention): number {
  return Math.max(1, Math.floor(keep.maxEntries / 10))
}

/**
 * Inserts one entry; the entry's id. A whole entry (`prune`) keeps its budget within the retention at once;
 * an entry written before its action ran is counted when it is finished, in the budget it ends in (a write
 * that turns out refused or unchanged must not push an action out on its way in).
 */
export async function insertAuditEntry(db: Db, e: Omit<AuditLogRow, 'id'>, keep: AuditRetention, prune = true): Promise<number> {
  const id = await insertAuditRow(db, e)
  // Each entry trims its own budget (by count through the (budget, id) index, by age through (budget, at)), the writer's own entries first.
  if (prune) await pruneAuditLog(db, e.budget, e.at, keep, e.principal)
  return id
}

/** Inserts one entry without trimming its budget (the caller prunes it: many entries, one prune). */
export async function insertAuditRow(db: Db, e: Omit<AuditLogRow, 'id'>): Promise<number> {
  const row = await db.get<{ id: number }>(
    `INSERT INTO audit_log (at, budget, principal, principal_kind, token_id, source, action, target, outcome, detail)
     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10) RETURNING id`,
    e.at, e.budget, e.principal, e.principal_kind, e.token_id, e.source, e.action, e.target, e.outcome, e.detail,
  )
  return Number(row!.id)
}

/** The id from which entries fall outside the newest `n` of the rows matched, if there are more than `n`. */
const beyond = (where: string, n: number) => `SELECT id FROM audit_log WHERE ${where} ORDER BY id DESC LIMIT 1 OFFSET ${Math.floor(n)}`

export async function pruneAuditLog(db: Db, budget: AuditBudget, now: number, keep: AuditRetention, writer?: string): Promise<void> {
  await db.run('DELETE FROM audit_log WHERE budget = ?1 AND at < ?2', budget, now - keep.maxAgeMs)
  const full = await db.get<{ id: number }>(beyond('budget = ?1', keep.maxEntries), budget)
  if (!full) return
  if (writer !== undefined) {
    // The writer pays first: while it holds more than its share, its own oldest entry goes instead of anyone else's
    // (both found through the (budget, principal, id) index).
    await db.run(
      `DELETE FROM audit_log WHERE id = (SELECT id FROM audit_log WHERE budget = ?1 AND principal = ?2 ORDER BY id LIMIT 1)
         AND EXISTS (${beyond('budget = ?1 AND principal = ?2', principalShare(keep))})`,
      budget, writer,
    )
  }
  await db.run(`DELETE FROM audit_log WHERE budget = ?1 AND id <= (${beyond('budget = ?1', keep.maxEntries)})`, budget)
}

/** The end of an entry written before its action ran; principal/target/budget when only the action learned them. Its budget and principal, for pruning. */
export async function finishAuditEntry(db: Db, id: number, f: { outcome: string; detail: string | null; principal?: string; principalKind?: string; target?: string | null; budget?: AuditBudget }): Promise<{ budget: AuditBudget; principal: string } | null> {
  return await db.get<{ budget: AuditBudget; principal: string }>(
    `UPDATE audit_log SET outcome = ?2, detail = ?3, principal = COALESCE(?4, principal), principal_kind = COALESCE(?5, principal_kind),
            target = CASE WHEN ?6 = 1 THEN ?7 ELSE target END, budget = COALESCE(?8, budget) WHERE id = ?1 RETURNING budget, principal`,
    id, f.outcome, f.detail, f.principal ?? null, f.principalKind ?? null, f.target === undefined ? 0 : 1, f.target ?? null, f.budget ?? null,
  )
}

export interface AuditFilter {
  /** Entries at or after (ms). */
  since?: number
  principal?: string
  /** An action, or a prefix of dotted actions (`node` matches node.drain). */
  action?: string
  /** Page: entries older than this id (newest first). */
  before?: number
  /** Follow: entries newer than this id (oldest first). */
  after?: number
  limit: number
}

/** Entries of both budgets within the retention, newest first (oldest first with `after`). */
export async function listAuditEntries(db: Db, f: AuditFilter, now: number, keep: AuditRetention): Promise<AuditLogRow[]> {
  const where = ['at >= ?1']
  const params: (string | number)[] = [Math.max(f.since ?? 0, now - keep.maxAgeMs)]
  const add = (sql: string, ...values: (string | number)[]) => {
    where.push(sql.replace(/\?(\d)/g, (_, n: string) => `?${params.length + Number(n)}`))
    params.push(...values)
  }
  if (f.principal !== undefined) add('principal = ?1', f.principal)
  if (f.action !== undefined) add("(action = ?1 OR action LIKE ?2 ESCAPE '\\')", f.action, `${f.action.replace(/[\\%_]/g, (c) => `\\${c}`)}.%`)
  if (f.before !== undefined) add('id < ?1', f.before)
  if (f.after !== undefined) add('id > ?1', f.after)
  const order = f.after !== undefined ? 'ASC' : 'DESC'
  return db.all<AuditLogRow>(`SELECT * FROM audit_log WHERE ${where.join(' AND ')} ORDER BY id ${order} LIMIT ${Math.floor(f.limit)}`, ...params)
}
