// The api_tokens table: the id is public, only the secret's SHA-256 is kept.
import type { Db } from './db.ts'

export interface ApiTokenRow {
  id: string
  name: string
  secret_hash: string
  role: string
  account: string | null
  created_at: number
  last_used_at: number | null
  revoked_at: number | null
}

export async function insertApiToken(db: Db, t: { id: string; name: string; secretHash: string; role: string; account: string | null; now: number }): Promise<void> {
  await db.run('INSERT INTO api_tokens (id, name, secret_hash, role, account, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6)', t.id,
    t.name,
    t.secretHash,
    t.role,
    t.account,
    t.now,)
}

export async function getApiToken(db: Db, id: string): Promise<ApiTokenRow | null> {
  return await db.get<ApiTokenRow>('SELECT * FROM api_tokens WHERE id = ?1 AND revoked_at IS NULL', id)
}
