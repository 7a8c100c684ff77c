// Sign-in with an OpenID provider: the provider subject each sso account
// belongs to, the flows in progress (each taken once, atomically), and the
// break-glass acts that open password login under --oidc-only.
import type { Db } from './db.ts'

export interface SsoFlowRow {
  kind: 'web' | 'cli' | 'device'
  nonce: string | null
  verifier: string | null
  binding: string | null
  cli_redirect: string | null
  cli_state: string | null
  cli_challenge: string | null
  device_code: string | null
  account: string | null
  session_expires_at: number | null
  expires_at: number
}

/** The account an (issuer, subject) signed in as before; null for a first sign-in. */
export async function ssoAccountOf(db: Db, issuer: string, subject: string): Promise<string | null> {
  return (await db.get<{ account: string }>('SELECT account FROM sso_identities WHERE issuer = ?1 AND subject = ?2', issuer, subject))?.account ?? null
}

/** Creates an sso account (no password) bound to the subject; false when the name is taken. */
export async function createSsoAccount(db: Db, a: { name: string; role: string; issuer: string; subject: string; now: number }): Promise<boolean> {
  return db.tx(async (t) => {
    const n = await t.run("INSERT INTO accounts (name, role, password_hash, origin, created_at) VALUES (?1, ?2, NULL, 'sso', ?3) ON CONFLICT(name) DO NOTHING", a.name, a.role, a.now)
    if (n !== 1) return false
    await t.run('INSERT INTO sso_identities (account, issuer, subject, created_at) VALUES (?1, ?2, ?3, ?4)', a.name, a.issuer, a.subject, a.now)
    return true
  })
}

export async function insertSsoFlow(db: Db, idHash: string, f: Partial<SsoFlowRow> & { kind: SsoFlowRow['kind']; expires_at: number }, now: number): Promise<void> {
  await db.run('DELETE FROM sso_flows WHERE expires_at <= ?1', now)
  await db.run(
    `INSERT INTO sso_flows (id_hash, kind, nonce, verifier, binding, cli_redirect, cli_state, cli_challenge, device_code, created_at, expires_at)
     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)`,
    idHash, f.kind, f.nonce ?? null, f.verifier ?? null, f.binding ?? null, f.cli_redirect ?? null, f.cli_state ?? null, f.cli_challenge ?? null, f.device_code ?? null, now, f.expires_at,
  )
}

const FLOW_COLUMNS = 'kind, nonce, verifier, binding, cli_redirect, cli_state, cli_challenge, device_code, account, session_expires_at, expires_at'

/** Takes a live flow by its state's digest: once, whoever asks second gets null. */
export async function takeSsoFlow(db: Db, idHash: string, now: number): Promise<SsoFlowRow | null> {
  return db.get<SsoFlowRow>(`DELETE FROM sso_flows WHERE id_hash = ?1 AND expires_at > ?2 AND grant_hash IS NULL RETURNING ${FLOW_COLUMNS}`, idHash, now)
}

/** A live device flow, left in place (it is polled until the user confirms). */
export async function peekSsoFlow(db: Db, idHash: string, now: number): Promise<SsoFlowRow | null> {
  return db.get<SsoFlowRow>(`SELECT ${FLOW_COLUMNS} FROM sso_flows WHERE id_hash = ?1 AND expires_at > ?2`, idHash, now)
}

export async function deleteSsoFlow(db: Db, idHash: string): Promise<void> {
  await db.run('DELETE FROM sso_flows WHERE id_hash = ?1', idHash)
}

/** A CLI flow whose sign-in passed: a one-time grant the CLI redeems with its PKCE verifier. */
export async function insertSsoGrant(db: Db, grantHash: string, g: { account: string; cliChallenge: string; sessionExpiresAt: number; expiresAt: number }, now: number): Promise<void> {
  await db.run(
    "INSERT INTO sso_flows (id_hash, kind, cli_challenge, grant_hash, account, session_expires_at, created_at, expires_at) VALUES (?1, 'cli', ?2, ?1, ?3, ?4, ?5, ?6)",
    grantHash, g.cliChallenge, g.account, g.sessionExpiresAt, now, g.expiresAt,
  )
}

/** Takes a live grant: once. */
export async function takeSsoGrant(db: Db, grantHash: string, now: number): Promise<SsoFlowRow | null> {
  return db.get<SsoFlowRow>(`DELETE FROM sso_flows WHERE grant_hash = ?1 AND expires_at > ?2 RETURNING ${FLOW_COLUMNS}`, grantHash, now)
}

export async function insertPasswordBreakGlass(db: Db, id: string, account: string | null, at: number): Promise<void> {
  await db.run('INSERT INTO password_break_glass (id, account, at) VALUES (?1, ?2, ?3)', id, account, at)
}

/** A break-glass for this account (or for every account) made after `since`. */
export async function passwordBreakGlassSince(db: Db, account: string, since: number): Promise<boolean> {
  return Boolean(await db.get('SELECT id FROM password_break_glass WHERE (account IS NULL OR account = ?1) AND at > ?2 LIMIT 1', account, since))
}
