// The api_tokens table: the id is public, only the secret's keyed digest is kept (src/crypto/token-digest.ts).
// `origin` says how a token was made: 'login' (by a password login, or by a
// token that descends from one: revoked when the account's password changes),
// 'host' (`muster admin api-token`) or 'api' (minted with another token).
import type { Db } from './db.ts'

export type ApiTokenOrigin = 'login' | 'host' | 'api'

export interface ApiTokenRow {
  id: string
  name: string
  secret_hash: string
  role: string
  account: string | null
  created_at: number
  last_used_at: number | null
  revoked_at: number | null
  expires_at: number | null
  origin: ApiTokenOrigin
  /** The first token of its lineage (null: this token is one, made by a host or a login). */
  root_id: string | null
}

export async function insertApiToken(db: Db, t: { id: string; name: string; secretHash: string; role: string; account: string | null; now: number; expiresAt?: number | null; origin?: ApiTokenOrigin; rootId?: string | null }): Promise<void> {
  await db.run(
    'INSERT INTO api_tokens (id, name, secret_hash, role, account, created_at, expires_at, origin, root_id) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)',
    t.id, t.name, t.secretHash, t.role, t.account, t.now, t.expiresAt ?? null, t.origin ?? 'host', t.rootId ?? null,
  )
}

/** A token that is neither revoked nor expired at `now`. */
export async function getApiToken(db: Db, id: string, now: number): Promise<ApiTokenRow | null> {
  return await db.get<ApiTokenRow>('SELECT * FROM api_tokens WHERE id = ?1 AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > ?2)', id, now)
}
