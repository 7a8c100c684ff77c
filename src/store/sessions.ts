// The sessions table: only SHA-256 digests of session ids are kept.
import type { Db } from './db.ts'

export function insertSession(db: Db, idHash: string, account: string, now: number, expiresAt: number): void {
  db.query('INSERT INTO sessions (id_hash, account, created_at, expires_at) VALUES (?1, ?2, ?3, ?4)').run(idHash, account, now, expiresAt)
}

export function findSession(db: Db, idHash: string, now: number): { account: string } | null {
  return db.query<{ account: string }, [string, number]>('SELECT account FROM sessions WHERE id_hash = ?1 AND expires_at > ?2').get(idHash, now)
}

export function deleteSession(db: Db, idHash: string): void {
  db.query('DELETE FROM sessions WHERE id_hash = ?1').run(idHash)
}

export function pruneSessions(db: Db, now: number): void {
  db.query('DELETE FROM sessions WHERE expires_at <= ?1').run(now)
}
