// The join_tokens table: single-use enrollments and fleet tokens. Only the
// secret's keyed digest is kept; uses are taken by one compare-and-set statement.
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
  /** The provision a first-boot token was minted for (Hetzner, DigitalOcean): bound to the server it created. */
  provision_id?: string | null
}

export async function insertJoinToken(db: Db, t: Omit<JoinTokenRow, 'uses' | 'revoked_at'>): Promise<void> {
  await db.run(`INSERT INTO join_tokens (id, secret_hash, kind, node_id, name_pattern, label, max_uses, created_at, expires_at, provision_id)
     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)`, t.id, t.secret_hash, t.kind, t.node_id, t.name_pattern, t.label, t.max_uses, t.created_at, t.expires_at, t.provision_id ?? null)
}

export async function getJoinToken(db: Db, id: string): Promise<JoinTokenRow | null> {
  return await db.get<JoinTokenRow>('SELECT * FROM join_tokens WHERE id = ?1', id)
}

/** Takes one use of a join token; false when none is left (used up, expired or revoked). */
export async function takeTokenUse(db: Db, id: string, now: number): Promise<boolean> {
  return (
    (await db.get(`UPDATE join_tokens SET uses = uses + 1
          WHERE id = ?1 AND revoked_at IS NULL AND expires_at > ?2 AND uses < max_uses
          RETURNING uses`, id, now)) !== null
  )
}

/** Unused, unexpired, unrevoked enrollments (node-bound tokens). */
export async function pendingEnrollments(db: Db, now: number, nodeId?: string): Promise<JoinTokenRow[]> {
  if (nodeId !== undefined) {
    return await db.all<JoinTokenRow>(`SELECT * FROM join_tokens WHERE kind = 'enrollment' AND uses < max_uses AND revoked_at IS NULL AND expires_at > ?1 AND node_id = ?2`, now, nodeId)
  }
  return await db.all<JoinTokenRow>(`SELECT * FROM join_tokens WHERE kind = 'enrollment' AND uses < max_uses AND revoked_at IS NULL AND expires_at > ?1 ORDER BY created_at`, now)
}

export async function listFleetTokens(db: Db): Promise<JoinTokenRow[]> {
  return await db.all<JoinTokenRow>(`SELECT * FROM join_tokens WHERE kind = 'fleet' ORDER BY created_at DESC`)
}

export async function revokeJoinToken(db: Db, id: string, now: number): Promise<boolean> {
  return (await db.run('UPDATE join_tokens SET revoked_at = ?2 WHERE id = ?1 AND revoked_at IS NULL', id, now)) === 1
}

export async function revokePendingEnrollments(db: Db, nodeId: string, now: number): Promise<void> {
  await db.run(`UPDATE join_tokens SET revoked_at = ?2 WHERE kind = 'enrollment' AND node_id = ?1 AND revoked_at IS NULL AND uses < max_uses`, nodeId, now)
}
