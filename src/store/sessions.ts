// The sessions table: only SHA-256 digests of session ids are kept.
import type { Db } from './db.ts'

export async function insertSession(db: Db, idHash: string, account: string, now: number, expiresAt: number): Promise<void> {
  await db.run('INSERT INTO sessions (id_hash, account, created_at, expires_at) VALUES (?1, ?2, ?3, ?4)', idHash, account, now, expiresAt)
}

export async function findSession(db: Db, idHash: string, now: number): Promise<{ account: string } | null> {
  return await db.get<{ account: string }>('SELECT account FROM sessions WHERE id_hash = ?1 AND expires_at > ?2', idHash, now)
}

export async function deleteSession(db: Db, idHash: string): Promise<void> {
  await db.run('DELETE FROM sessions WHERE id_hash = ?1', idHash)
}

export async function pruneSessions(db: Db, now: number): Promise<void> {
  await db.run('DELETE FROM sessions WHERE expires_at <= ?1', now)
}
