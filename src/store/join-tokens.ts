// The join_tokens table: single-use enrollments and fleet tokens. Only the
// secret's SHA-256 is kept; uses are taken by one compare-and-set statement.
import type { Db } from './db.ts'

export interface JoinTokenRow {
  id: string
  secret_hash: string
  kind: 'enrollment' | 'fleet'
  node_id: string | null
  name_pattern: string | null
  label: string | null
  max_uses: number
  uses: number
  created_at: number
  expires_at: number
  revoked_at: number | null
}

export function insertJoinToken(db: Db, t: Omit<JoinTokenRow, 'uses' | 'revoked_at'>): void {
  db.query(
    `INSERT INTO join_tokens (id, secret_hash, kind, node_id, name_pattern, label, max_uses, created_at, expires_at)
     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)`,
  ).run(t.id, t.secret_hash, t.kind, t.node_id, t.name_pattern, t.label, t.max_uses, t.created_at, t.expires_at)
}

export function getJoinToken(db: Db, id: string): JoinTokenRow | null {
  return db.query<JoinTokenRow, [string]>('SELECT * FROM join_tokens WHERE id = ?1').get(id)
}

/** Takes one use of a join token; false when none is left (used up, expired or revoked). */
export function takeTokenUse(db: Db, id: string, now: number): boolean {
  return (
    db
      .query(
        `UPDATE join_tokens SET uses = uses + 1
          WHERE id = ?1 AND revoked_at IS NULL AND expires_at > ?2 AND uses < max_uses
          RETURNING uses`,
      )
      .get(id, now) !== null
  )
}

/** Unused, unexpired, unrevoked enrollments (node-bound tokens). */
export function pendingEnrollments(db: Db, now: number, nodeId?: string): JoinTokenRow[] {
  if (nodeId !== undefined) {
    return db
      .query<JoinTokenRow, [number, string]>(
        `SELECT * FROM join_tokens WHERE kind = 'enrollment' AND uses < max_uses AND revoked_at IS NULL AND expires_at > ?1 AND node_id = ?2`,
      )
      .all(now, nodeId)
  }
  return db
    .query<JoinTokenRow, [number]>(
      `SELECT * FROM join_tokens WHERE kind = 'enrollment' AND uses < max_uses AND revoked_at IS NULL AND expires_at > ?1 ORDER BY created_at`,
    )
    .all(now)
}

export function listFleetTokens(db: Db): JoinTokenRow[] {
  return db.query<JoinTokenRow, []>(`SELECT * FROM join_tokens WHERE kind = 'fleet' ORDER BY created_at DESC`).all()
}

export function revokeJoinToken(db: Db, id: string, now: number): boolean {
  return db.query('UPDATE join_tokens SET revoked_at = ?2 WHERE id = ?1 AND revoked_at IS NULL').run(id, now).changes === 1
}

export function revokePendingEnrollments(db: Db, nodeId: string, now: number): void {
  db.query(`UPDATE join_tokens SET revoked_at = ?2 WHERE kind = 'enrollment' AND node_id = ?1 AND revoked_at IS NULL AND uses < max_uses`).run(nodeId, now)
}
