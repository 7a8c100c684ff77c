// The accounts table.
import type { Db } from './db.ts'

export interface AccountRow {
  name: string
  role: string
  password_hash: string | null
  disabled: number
  origin: string
  created_at: number
  /** Accounts for people may expire (null: never). */
  expires_at?: number | null
}

export async function getAccount(db: Db, name: string): Promise<AccountRow | null> {
  return await db.get<AccountRow>('SELECT * FROM accounts WHERE name = ?1', name)
}

export async function insertAccount(db: Db, a: { name: string; role: string; passwordHash: string | null; origin?: string; now: number }): Promise<boolean> {
  const changed = await db.run('INSERT INTO accounts (name, role, password_hash, origin, created_at) VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT(name) DO NOTHING', a.name, a.role, a.passwordHash, a.origin ?? 'local', a.now)
  return changed === 1
}

export async function setPasswordHash(db: Db, name: string, hash: string | null): Promise<boolean> {
  return (await db.run('UPDATE accounts SET password_hash = ?2 WHERE name = ?1', name, hash)) === 1
}

export async function countAccounts(db: Db): Promise<number> {
  return (await db.get<{ n: number }>('SELECT COUNT(*) AS n FROM accounts'))?.n ?? 0
}

