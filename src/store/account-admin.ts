// Accounts for people: creating, listing, changing role, disabling
// and removing, and ending what an account's logins made. The rule that the
// last live superadmin stays one is checked inside the transaction that
// changes it (one at a time on PostgreSQL), never read-then-write.
import type { Db } from './db.ts'

export interface AccountListRow {
  name: string
  role: string
  origin: string
  disabled: number
  has_password: number
  created_at: number
  expires_at: number | null
  sessions: number
}

const ACCOUNT_LOCK = 738_030

/** Live superadmins other than the account ?1: enabled and not expired at `now` (the parameter named). */
const otherSuperadmins = (now: string) => `(SELECT COUNT(*) FROM accounts o WHERE o.role = 'superadmin' AND o.disabled = 0 AND (o.expires_at IS NULL OR o.expires_at > ${now}) AND o.name <> ?1)`

async function serialized<T>(db: Db, fn: (t: Db) => Promise<T>): Promise<T> {
  return db.tx(async (t) => {
    if (t.engine === 'postgres') await t.get('SELECT pg_advisory_xact_lock(?1)', ACCOUNT_LOCK)
    return fn(t)
  })
}

export async function createAccount(db: Db, a: { name: string; role: string; passwordHash: string; expiresAt: number | null; now: number }): Promise<boolean> {
  const n = await db.run(
    "INSERT INTO accounts (name, role, password_hash, origin, created_at, expires_at) VALUES (?1, ?2, ?3, 'local', ?4, ?5) ON CONFLICT(name) DO NOTHING",
    a.name, a.role, a.passwordHash, a.now, a.expiresAt,
  )
  return n === 1
}

export async function listAccountRows(db: Db, now: number): Promise<AccountListRow[]> {
  return db.all<AccountListRow>(
    `SELECT a.name, a.role, a.origin, a.disabled, CASE WHEN a.password_hash IS NULL THEN 0 ELSE 1 END AS has_password, a.created_at, a.expires_at,
            (SELECT COUNT(*) FROM sessions s WHERE s.account = a.name AND s.expires_at > ?1) AS sessions
       FROM accounts a ORDER BY a.name`,
    now,
  )
}

export type Guarded = 'ok' | 'not-found' | 'last-superadmin'

/** Changes a role; refused when it would leave no live superadmin. The previous role on 'ok'. */
export async function setAccountRole(db: Db, name: string, role: string, now: number): Promise<{ result: Guarded; previous?: string }> {
  return serialized(db, async (t) => {
    const row = await t.get<{ role: string }>('SELECT role FROM accounts WHERE name = ?1', name)
    if (!row) return { result: 'not-found' }
    const n = await t.run(`UPDATE accounts SET role = ?2 WHERE name = ?1 AND (?2 = 'superadmin' OR role <> 'superadmin' OR ${otherSuperadmins('?3')} > 0)`, name, role, now)
    return n === 1 ? { result: 'ok', previous: row.role } : { result: 'last-superadmin' }
  })
}

/** Disables or enables; disabling the last live superadmin is refused. */
export async function setAccountDisabled(db: Db, name: string, disabled: boolean, now: number): Promise<Guarded> {
  return serialized(db, async (t) => {
    if (!(await t.get('SELECT 1 FROM accounts WHERE name = ?1', name))) return 'not-found'
    if (!disabled) return (await t.run('UPDATE accounts SET disabled = 0 WHERE name = ?1', name)) === 1 ? 'ok' : 'not-found'
    const n = await t.run(`UPDATE accounts SET disabled = 1 WHERE name = ?1 AND (role <> 'superadmin' OR ${otherSuperadmins('?2')} > 0)`, name, now)
    return n === 1 ? 'ok' : 'last-superadmin'
  })
}

/** Removes an account with its sessions, revoking every token it held; refused for the last live superadmin. */
export async function deleteAccount(db: Db, name: string, now: number): Promise<Guarded> {
  return serialized(db, async (t) => {
    if (!(await t.get('SELECT 1 FROM accounts WHERE name = ?1', name))) return 'not-found'
    const n = await t.run(`DELETE FROM accounts WHERE name = ?1 AND (role <> 'superadmin' OR ${otherSuperadmins('?2')} > 0)`, name, now)
    if (n !== 1) return 'last-superadmin'
    await t.run('DELETE FROM sessions WHERE account = ?1', name)
    await revokeTokensWhere(t, 'account = ?2', now, name)
    return 'ok'
  })
}

/**
 * Ends an account's sessions and revokes the tokens its logins made, with
 * every token descended from them (a demotion, a disable, a new password).
 */
export async function endAccountSessions(db: Db, account: string, now: number): Promise<{ sessions: number; tokens: number }> {
  return db.tx(async (t) => ({
    sessions: await t.run('DELETE FROM sessions WHERE account = ?1', account),
    tokens: await revokeTokensWhere(t, "account = ?2 AND origin = 'login'", now, account),
  }))
}

/** Records the token a token was minted by (its parent). */
export async function recordTokenParent(db: Db, id: string, parentId: string): Promise<void> {
  await db.run('UPDATE api_tokens SET parent_id = ?2 WHERE id = ?1', id, parentId)
}

/** Revokes one token and every token descended from it; how many were live. */
export async function revokeTokenTree(db: Db, id: string, now: number): Promise<number> {
  return revokeTokensWhere(db, 'id = ?2', now, id)
}

/** Revokes the live tokens matching `where` (its parameter is ?2) and all their descendants. */
async function revokeTokensWhere(db: Db, where: string, now: number, param: string): Promise<number> {
  return db.run(
    `WITH RECURSIVE tree(id) AS (
       SELECT id FROM api_tokens WHERE ${where}
       UNION SELECT t.id FROM api_tokens t JOIN tree ON t.parent_id = tree.id
     )
     UPDATE api_tokens SET revoked_at = ?1 WHERE id IN (SELECT id FROM tree) AND revoked_at IS NULL`,
    now, param,
  )
}
