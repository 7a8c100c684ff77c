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

export function insertAudit(db: Db, e: Omit<AuditRow, 'id'>): void {
  db.query('INSERT INTO enroll_audit (at, outcome, reason, node_id, version) VALUES (?1, ?2, ?3, ?4, ?5)').run(e.at, e.outcome, e.reason, e.node_id, e.version)
}

export function pruneAudit(db: Db, now: number): void {
  db.query('DELETE FROM enroll_audit WHERE at < ?1').run(now - AUDIT_MAX_AGE_MS)
  db.query(`DELETE FROM enroll_audit WHERE id <= (SELECT id FROM enroll_audit ORDER BY id DESC LIMIT 1 OFFSET ${AUDIT_MAX_ENTRIES})`).run()
}

export function listAudit(db: Db, now: number): AuditRow[] {
  return db
    .query<AuditRow, [number]>(`SELECT * FROM enroll_audit WHERE at >= ?1 ORDER BY id DESC LIMIT ${AUDIT_MAX_ENTRIES}`)
    .all(now - AUDIT_MAX_AGE_MS)
}
