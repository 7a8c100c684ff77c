// The cloud_audit table: one row per cloud action (connect, disconnect,
// provision, release, scaling, autoscale-order) with who did it. A row is
// written as "started" before the action runs and finished after it.
import type { CloudAuditEntry } from '../wire/cloud.ts'
import type { Db } from './db.ts'

/** A row: the audit entry the API shows, with its id and its time in ms. */
export interface CloudAuditRow extends Omit<CloudAuditEntry, 'at'> {
  id: number
  at: number
}

/** How many rows are kept; older ones are dropped as new ones come. */
export const CLOUD_AUDIT_KEEP = 5000

export async function insertCloudAudit(db: Db, r: Omit<CloudAuditRow, 'id'>): Promise<number> {
  const row = await db.get<{ id: number }>(
    'INSERT INTO cloud_audit (at, action, principal, via, provider, target, outcome, detail) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) RETURNING id',
    r.at,
    r.action,
    r.principal,
    r.via,
    r.provider,
    r.target,
    r.outcome,
    r.detail,
  )
  const id = row!.id
  await db.run('DELETE FROM cloud_audit WHERE id <= ?1', id - CLOUD_AUDIT_KEEP)
  return id
}

export async function finishCloudAudit(db: Db, id: number, outcome: 'ok' | 'failed', detail: string | null): Promise<void> {
  await db.run('UPDATE cloud_audit SET outcome = ?2, detail = ?3 WHERE id = ?1', id, outcome, detail)
}

/** Newest first. */
export async function listCloudAudit(db: Db, limit = 500): Promise<CloudAuditRow[]> {
  return await db.all<CloudAuditRow>('SELECT * FROM cloud_audit ORDER BY id DESC LIMIT ?1', limit)
}
