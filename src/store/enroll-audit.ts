// The enroll_audit table: at most 500 entries and 30 days.
import type { Db } from './db.ts'

export const AUDIT_MAX_ENTRIES = 500
export const AUDIT_MAX_AGE_MS = 30 * 86400_000

export interface AuditRow {
  id: number
  at: number
  outcome: string
  reason: string | null
  node_id: string | null
  version: string | null
}

export async function insertAudit(db: Db, e: Omit<AuditRow, 'id'>): Promise<void> {
  await db.run('INSERT INTO enroll_audit (at, outcome, reason, node_id, version) VALUES (?1, ?2, ?3, ?4, ?5)', e.at, e.outcome, e.reason, e.node_id, e.version)
}

export async function pruneAudit(db: Db, now: number): Promise<void> {
  await db.run('DELETE FROM enroll_audit WHERE at < ?1', now - AUDIT_MAX_AGE_MS)
  await db.run(`DELETE FROM enroll_audit WHERE id <= (SELECT id FROM enroll_audit ORDER BY id DESC LIMIT 1 OFFSET ${AUDIT_MAX_ENTRIES})`)
}

export async function listAudit(db: Db, now: number): Promise<AuditRow[]> {
  return await db.all<AuditRow>(`SELECT * FROM enroll_audit WHERE at >= ?1 ORDER BY id DESC LIMIT ${AUDIT_MAX_ENTRIES}`, now - AUDIT_MAX_AGE_MS)
}
