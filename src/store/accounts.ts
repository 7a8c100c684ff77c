// The accounts table.
import type { Db } from './db.ts'

export interface AccountRow {
  name: string
  role: string
  password_hash: string | null
  disabled: number
  origin: string
  created_at: number
}

export function getAccount(db: Db, name: string): AccountRow | null {
  return db.query<AccountRow, [string]>('SELECT * FROM accounts WHERE name = ?1').get(name)
}

export function insertAccount(db: Db, a: { name: string; role: string; passwordHash: string | null; origin?: string; now: number }): boolean {
  const r = db
    .query('INSERT INTO accounts (name, role, password_hash, origin, created_at) VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT(name) DO NOTHING')
    .run(a.name, a.role, a.passwordHash, a.origin ?? 'local', a.now)
  return r.changes === 1
}

export function setPasswordHash(db: Db, name: string, hash: string | null): boolean {
  return db.query('UPDATE accounts SET password_hash = ?2 WHERE name = ?1').run(name, hash).changes === 1
}

export function countAccounts(db: Db): number {
  return db.query<{ n: number }, []>('SELECT COUNT(*) AS n FROM accounts').get()?.n ?? 0
}

