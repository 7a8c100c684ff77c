// The audit_log table: one row per authenticated write, with who
// (principal and its kind), from where, what, on what and how it ended. Two
// budgets, each kept to a count and an age: 'actions' (what principals did)
// and 'refusals' (failed logins, unauthenticated or suspended attempts), so
// no volume of junk can push an action out.
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

/** Inserts one entry and keeps its budget within the retention; the entry's id. */
export async function insertAuditEntry(db: Db, e: Omit<AuditLogRow, 'id'>, keep: AuditRetention): Promise<number> {
  const id = await insertAuditRow(db, e)
  // Each entry trims its own budget (by count through the (budget, id) index, by age through (budget, at)).
  await pruneAuditLog(db, e.budget, e.at, keep)
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

export async function pruneAuditLog(db: Db, budget: AuditBudget, now: number, keep: AuditRetention): Promise<void> {
  await db.run('DELETE FROM audit_log WHERE budget = ?1 AND at < ?2', budget, now - keep.maxAgeMs)
  await db.run(`DELETE FROM audit_log WHERE budget = ?1 AND id <= (SELECT id FROM audit_log WHERE budget = ?1 ORDER BY id DESC LIMIT 1 OFFSET ${Math.floor(keep.maxEntries)})`, budget)
}

/** The end of an entry written before its action ran; principal/target/budget when only the action learned them. */
export async function finishAuditEntry(db: Db, id: number, f: { outcome: string; detail: string | null; principal?: string; principalKind?: string; target?: string | null; budget?: AuditBudget }): Promise<void> {
  await db.run(
    `UPDATE audit_log SET outcome = ?2, detail = ?3, principal = COALESCE(?4, principal), principal_kind = COALESCE(?5, principal_kind),
            target = CASE WHEN ?6 = 1 THEN ?7 ELSE target END, budget = COALESCE(?8, budget) WHERE id = ?1`,
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
