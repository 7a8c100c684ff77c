// The sessions table: only keyed digests of session ids are kept. A session
// opened by a vouch carries its origin and a role cap (docs/security.md).
import type { Db } from './db.ts'

export interface SessionRow {
  account: string
  origin: 'password' | 'vouch' | 'sso'
  role_cap: string | null
  expires_at: number
}

export async function insertSession(db: Db, idHash: string, account: string, now: number, expiresAt: number, opts: { origin?: 'password' | 'vouch' | 'sso'; roleCap?: string | null } = {}): Promise<void> {
  await db.run('INSERT INTO sessions (id_hash, account, created_at, expires_at, origin, role_cap) VALUES (?1, ?2, ?3, ?4, ?5, ?6)', idHash, account, now, expiresAt, opts.origin ?? 'password', opts.roleCap ?? null)
}

export async function findSession(db: Db, idHash: string, now: number): Promise<SessionRow | null> {
  return await db.get<SessionRow>('SELECT account, origin, role_cap, expires_at FROM sessions WHERE id_hash = ?1 AND expires_at > ?2', idHash, now)
}

/** Ends a session; whether there was one. */
export async function deleteSession(db: Db, idHash: string): Promise<boolean> {
  return (await db.run('DELETE FROM sessions WHERE id_hash = ?1', idHash)) > 0
}

export async function pruneSessions(db: Db, now: number): Promise<void> {
  await db.run('DELETE FROM sessions WHERE expires_at <= ?1', now)
}
