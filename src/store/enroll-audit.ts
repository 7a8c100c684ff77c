// The enroll_audit table: two budgets of at most 500 entries and 30 days each
// (docs/security.md), so no volume of refusals can push an enrollment record out.
import type { Db } from './db.ts'

export const AUDIT_MAX_ENTRIES = 500
export const AUDIT_MAX_AGE_MS = 30 * 86400_000

/** Which budget an outcome is kept under: what happened to nodes, or what was turned away. */
export type AuditBudget = 'enrollments' | 'refusals'
const ENROLLMENT_OUTCOMES = new Set(['enrolled', 'node-exists', 'worker-newer'])
export const auditBudget = (outcome: string): AuditBudget => (ENROLLMENT_OUTCOMES.has(outcome) ? 'enrollments' : 'refusals')
const BUDGETS: AuditBudget[] = ['enrollments', 'refusals']

export interface AuditRow {
  id: number
  at: number
  outcome: string
  reason: string | null
  node_id: string | null
  version: string | null
}

/** A version as the audit log keeps it: only when it has a version's shape. */
export function auditVersion(version: unknown): string | null {
  return typeof version === 'string' && /^[0-9A-Za-z.+-]{1,32}$/.test(version) ? version : null
}

export async function insertAudit(db: Db, e: Omit<AuditRow, 'id'>): Promise<void> {
  await db.run('INSERT INTO enroll_audit (at, outcome, reason, node_id, version, budget) VALUES (?1, ?2, ?3, ?4, ?5, ?6)', e.at, e.outcome, e.reason, e.node_id, e.version, auditBudget(e.outcome))
}

export async function pruneAudit(db: Db, now: number): Promise<void> {
  await db.run('DELETE FROM enroll_audit WHERE at < ?1', now - AUDIT_MAX_AGE_MS)
  for (const budget of BUDGETS) {
    await db.run(`DELETE FROM enroll_audit WHERE budget = ?1 AND id <= (SELECT id FROM enroll_audit WHERE budget = ?1 ORDER BY id DESC LIMIT 1 OFFSET ${AUDIT_MAX_ENTRIES})`, budget)
  }
}

/** Both budgets, newest first. */
export async function listAudit(db: Db, now: number): Promise<AuditRow[]> {
  const rows: AuditRow[] = []
  for (const budget of BUDGETS) {
    rows.push(...(await db.all<AuditRow>(`SELECT id, at, outcome, reason, node_id, version FROM enroll_audit WHERE budget = ?1 AND at >= ?2 ORDER BY id DESC LIMIT ${AUDIT_MAX_ENTRIES}`, budget, now - AUDIT_MAX_AGE_MS)))
  }
  return rows.sort((a, b) => Number(b.id) - Number(a.id))
}
