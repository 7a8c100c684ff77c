// Operators: accounts with argon2id passwords, opaque session cookies and API
// tokens. Resolves a request to a principal and checks its permissions.
import { MusterError } from '../errors.ts'
import { randomId, randomSecret, safeEqual } from '../crypto/tokens.ts'
import { tokenDigester, type TokenDigest } from '../crypto/token-digest.ts'
import type { DataDir } from '../datadir.ts'
import type { Db } from '../store/db.ts'
import { countAccounts, getAccount, insertAccount, setPasswordHash } from '../store/accounts.ts'
import { deleteSession, findSession, insertSession, pruneSessions } from '../store/sessions.ts'
import { getApiToken, insertApiToken, type ApiTokenOrigin } from '../store/api-tokens.ts'
import { endAccountLogins, touchApiToken } from '../store/token-lifecycle.ts'
import { isRole, lowerRole, roleCan, type Permission, type Role } from './permissions.ts'
import { log } from '../log.ts'
import { LoginThrottle } from './throttle.ts'

export const SESSION_COOKIE = 'muster_session'
export const SESSION_TTL_MS = 12 * 3600_000
/** A session opened by a vouch lives at most this long (SPEC §16.6). */
export const VOUCHED_SESSION_TTL_MS = 12 * 3600_000
export const INITIAL_PASSWORD_FILE = 'platform/initial-superadmin-password'
const API_TOKEN = /^mat_([a-z2-7]{16})\.([A-Za-z0-9_-]{43})$/
const ACCOUNT_NAME = /^[A-Za-z0-9][A-Za-z0-9._@-]{0,127}$/

export interface Principal {
  kind: 'session' | 'api-token'
  /** The account (sessions) or the token's name (API tokens). */
  name: string
  account: string | null
  role: Role
  /** API tokens: the token's id, how it was made, and when it expires (ms; null: never). */
  token?: { id: string; origin: ApiTokenOrigin; expiresAt: number | null }
  /** Sessions opened by a vouch: they cannot mint API tokens (SPEC §16.6). */
  vouched?: boolean
}

/** A check that may refuse password login before any credential is read (federation's local door). */
export type LoginGate = () => MusterError | null | Promise<MusterError | null>

export function hashPassword(password: string): Promise<string> {
  return Bun.password.hash(password, { algorithm: 'argon2id', memoryCost: 19456, timeCost: 2 })
}

export class Auth {
  readonly loginGates: LoginGate[] = []
  /** Failed-login brakes for POST /login (SPEC §16.5). */
  readonly throttle: LoginThrottle = new LoginThrottle(() => this.now())
  private dummyHash: Promise<string> | undefined

  private readonly db: Db
  readonly now: () => number

  /** The store the credentials live in. */
  get store(): Db {
    return this.db
  }

  /** Digests of session ids and token secrets, keyed under master.key (a row written without it matches nothing). */
  private readonly digest: TokenDigest

  constructor(ctx: { store: Db; now: () => number; masterKey: Uint8Array }) {
    this.db = ctx.store
    this.now = ctx.now
    this.digest = tokenDigester(ctx.masterKey)
  }

  /** First start: create `superadmin` and write its password once, 0600. */
  async ensureSuperadmin(dataDir: DataDir): Promise<void> {
    if ((await countAccounts(this.db)) > 0) return
    const password = randomSecret()
    if (!(await insertAccount(this.db, { name: 'superadmin', role: 'superadmin', passwordHash: await hashPassword(password), now: this.now() }))) return
    dataDir.writeSecret(INITIAL_PASSWORD_FILE, `${password}\n`)
    log.info(`Created account superadmin; its password is in ${dataDir.path(INITIAL_PASSWORD_FILE)} (readable by this user only)`)
  }

  /** The refusal of a login gate in force (checked before any credential is read), or null. */
  async loginRefusal(): Promise<MusterError | null> {
    for (const gate of this.loginGates) {
      const refusal = await gate()
      if (refusal) return refusal
    }
    return null
  }

  /** Verifies a password and opens a session; the same refusal whatever was wrong. */

  async login(identifier: string, password: string): Promise<{ sessionId: string; account: string }> {
    const refusal = await this.loginRefusal()
    if (refusal) throw refusal
    const account = ACCOUNT_NAME.test(identifier) ? await getAccount(this.db, identifier) : null
    const hash = account?.password_hash ?? (await (this.dummyHash ??= hashPassword(randomSecret())))
    const ok = await Bun.password.verify(password, hash).catch(() => false)
    if (!ok || !account || account.disabled || !account.password_hash) {
      throw new MusterError('login-refused', 'Login refused: unknown account or wrong password.')
    }
    const sessionId = randomSecret()
    const now = this.now()
    await pruneSessions(this.db, now)
    await insertSession(this.db, this.digest(sessionId), account.name, now, now + SESSION_TTL_MS)
    return { sessionId, account: account.name }
  }

  async logout(sessionId: string): Promise<void> {
    await deleteSession(this.db, this.digest(sessionId))
  }

  /** Opens a session for an account without a password (a redeemed vouch): at most `roleCap`, at most 12 hours, no token minting. */
  async openVouchedSession(account: string, roleCap: Role): Promise<string> {
    const sessionId = randomSecret()
    const now = this.now()
    await insertSession(this.db, this.digest(sessionId), account, now, now + VOUCHED_SESSION_TTL_MS, { origin: 'vouch', roleCap })
    return sessionId
  }

  async mintApiToken(opts: { name: string; role: Role; account?: string | null; expiresAt?: number | null; origin?: ApiTokenOrigin; now?: number }): Promise<{ token: string; id: string; expiresAt: number | null }> {
    const id = randomId(16)
    const secret = randomSecret()
    const expiresAt = opts.expiresAt ?? null
    await insertApiToken(this.db, { id, name: opts.name, secretHash: this.digest(secret), role: opts.role, account: opts.account ?? null, now: opts.now ?? this.now(), expiresAt, origin: opts.origin })
    return { token: `mat_${id}.${secret}`, id, expiresAt }
  }

  /** Refuses to tie a token to a missing account, or to one whose own role is lesser than the token's. */
  async assertAccountMayHold(account: string, role: Role): Promise<void> {
    const row = await getAccount(this.db, account)
    if (!row) throw new MusterError('not-found', `No account named ${account}.`)
    if (!isRole(row.role) || lowerRole(role, row.role) !== role) throw new MusterError('forbidden', `Account ${account} is ${row.role}; it cannot hold a ${role} token.`)
  }

  /** Sets a password, ending the account's sessions and revoking the tokens its logins made (SPEC §16.5). */
  async setPassword(account: string, password: string): Promise<{ sessions: number; tokens: number }> {
    if (!(await getAccount(this.db, account))) throw new MusterError('not-found', `No account named ${account}.`)
    await setPasswordHash(this.db, account, await hashPassword(password))
    return endAccountLogins(this.db, account, this.now())
  }

  /** The principal behind a request, or null when it carries no operator credential. */
  authenticate(headers: Headers): Promise<Principal | null> {
    const bearer = bearerToken(headers)
    if (bearer) return this.fromApiToken(bearer)
    const sid = readCookie(headers.get('cookie'), SESSION_COOKIE)
    if (sid) return this.fromSession(sid)
    return Promise.resolve(null)
  }

  /** The principal, refusing with 401 without credentials and 403 without the permission. */
  async require(headers: Headers, permission: Permission): Promise<Principal> {
    const p = await this.authenticate(headers)
    if (!p && /^mn[cj]_/.test(bearerToken(headers) ?? '')) {
      throw new MusterError('forbidden', 'Node credentials and join tokens are not accepted here; this route needs an operator.')
    }
    if (!p) throw new MusterError('unauthorized', 'Authentication required: give an operator API token (--token, $MUSTER_TOKEN or `muster login`; over HTTP, Authorization: Bearer mat_…).')
    if (!roleCan(p.role, permission)) throw new MusterError('forbidden', `Permission ${permission} is required.`)
    return p
  }

  private async fromApiToken(token: string): Promise<Principal | null> {
    const m = API_TOKEN.exec(token)
    if (!m) return null
    const now = this.now()
    // Revoked or expired tokens are not found: every request reads the store, so a revocation holds at once on every Platform.
    const row = await getApiToken(this.db, m[1]!, now)
    if (!row || !safeEqual(row.secret_hash, this.digest(m[2]!)) || !isRole(row.role)) return null
    if (row.account) {
      const acct = await getAccount(this.db, row.account)
      if (!acct || acct.disabled) return null
    }
    await touchApiToken(this.db, row.id, now)
    return { kind: 'api-token', name: row.name, account: row.account, role: row.role, token: { id: row.id, origin: row.origin, expiresAt: row.expires_at === null ? null : Number(row.expires_at) } }
  }

  private async fromSession(sid: string): Promise<Principal | null> {
    const row = await findSession(this.db, this.digest(sid), this.now())
    if (!row) return null
    const acct = await getAccount(this.db, row.account)
    if (!acct || acct.disabled || !isRole(acct.role)) return null
    if (row.origin === 'vouch') {
      // The lower of what the vouch granted and what the account holds now; a cap that is no role grants nothing.
      if (!row.role_cap || !isRole(row.role_cap)) return null
      return { kind: 'session', name: acct.name, account: acct.name, role: lowerRole(row.role_cap, acct.role), vouched: true }
    }
    return { kind: 'session', name: acct.name, account: acct.name, role: acct.role }
  }
}

/** The bearer token of a request's Authorization header, if any. */
export function bearerToken(headers: Headers): string | undefined {
  return headers.get('authorization')?.match(/^Bearer\s+(\S+)$/i)?.[1]
}

export function readCookie(header: string | null, name: string): string | undefined {
  if (!header) return undefined
  for (const part of header.split(';')) {
    const i = part.indexOf('=')
    if (i > 0 && part.slice(0, i).trim() === name) return part.slice(i + 1).trim()
  }
  return undefined
}
