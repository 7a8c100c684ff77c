// Listing and ending operator credentials: API tokens (revoked, never
// deleted, so a revoked id stays dead) and sessions (deleted). Every check
// reads the store, so an end takes effect at once on every Platform sharing it.
import type { Db } from './db.ts'
import type { ApiTokenRow } from './api-tokens.ts'

/** Live tokens (not revoked, not expired), of one account or (account undefined) of all. */
export async function listLiveApiTokens(db: Db, now: number, account?: string | null): Promise<ApiTokenRow[]> {
  const live = 'revoked_at IS NULL AND (expires_at IS NULL OR expires_at > ?1)'
  if (account === undefined) return db.all<ApiTokenRow>(`SELECT * FROM api_tokens WHERE ${live} ORDER BY created_at, id`, now)
  if (account === null) return db.all<ApiTokenRow>(`SELECT * FROM api_tokens WHERE ${live} AND account IS NULL ORDER BY created_at, id`, now)
  return db.all<ApiTokenRow>(`SELECT * FROM api_tokens WHERE ${live} AND account = ?2 ORDER BY created_at, id`, now, account)
}

/** Revokes one token; false when it was unknown or already revoked. */
export async function revokeApiToken(db: Db, id: string, now: number): Promise<boolean> {
  return (await db.run('UPDATE api_tokens SET revoked_at = ?2 WHERE id = ?1 AND revoked_at IS NULL', id, now)) === 1
}

/** Records a use at most once a minute per token (a write per request would be a write per request). */
export async function touchApiToken(db: Db, id: string, now: number): Promise<void> {
  await db.run('UPDATE api_tokens SET last_used_at = ?2 WHERE id = ?1 AND (last_used_at IS NULL OR last_used_at <= ?3)', id, now, now - 60_000)
}

/** Ends an account's sessions and revokes the tokens its logins made; the counts. */
export async function endAccountLogins(db: Db, account: string, now: number): Promise<{ sessions: number; tokens: number }> {
  return db.tx(async (t) => ({
    sessions: await t.run('DELETE FROM sessions WHERE account = ?1', account),
    tokens: await t.run("UPDATE api_tokens SET revoked_at = ?2 WHERE account = ?1 AND origin = 'login' AND revoked_at IS NULL", account, now),
  }))
}
