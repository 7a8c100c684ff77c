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
import { touchApiToken } from '../store/token-lifecycle.ts'
import { endAccountSessions, recordTokenParent } from '../store/account-admin.ts'
import { endSession, markSessionMembership, sessionMembership } from '../store/session-door.ts'
import { isRole, lowerRole, roleCan, VOUCHED_WITHHELD, type Permission, type Role } from '../wire/permissions.ts'
import { log } from '../log.ts'
import { LoginThrottle } from './throttle.ts'
import { passwordBreakGlassSince } from '../store/sso.ts'

export const SESSION_COOKIE = 'muster_session'
export const SESSION_TTL_MS = 12 * 3600_000
/** A session opened by a vouch lives at most this long (docs/security.md). */
export const VOUCHED_SESSION_TTL_MS = 12 * 3600_000
/** Under --oidc-only, a break-glass opens password login for this long. */
export const PASSWORD_BREAK_GLASS_MS = 12 * 3600_000
export const INITIAL_PASSWORD_FILE = 'platform/initial-superadmin-password'
const API_TOKEN = /^mat_([a-z2-7]{16})\.([A-Za-z0-9_-]{43})$/
export const ACCOUNT_NAME = /^[A-Za-z0-9][A-Za-z0-9._@-]{0,127}$/

export interface Principal {
  kind: 'session' | 'api-token'
  /** The account (sessions) or the token's name (API tokens). */
  name: string
  account: string | null
  role: Role
  /**
   * API tokens: the token's id, how it was made, when it expires (ms; null: never), and the first token of its
   * lineage (itself, unless a token minted it).
   */
  token?: { id: string; origin: ApiTokenOrigin; expiresAt: number | null; root: string }
  /** Sessions: opened while a break-glass held a joined office's door open (it ends when the door closes). */
  breakGlass?: boolean
  /** Sessions opened by a vouch: they mint no API token and hold no VOUCHED_WITHHELD permission (docs/federation.md). */
  vouched?: boolean
  /** Sessions opened by a sign-in with the identity provider: when they end (ms); a token they mint ends no later. */
  sso?: { expiresAt: number }
}

/**
 * The name a principal goes by wherever it is recorded or shown (the audit, "deployed by", "requested by"):
 * its account, or `token:<id>` for an API token tied to no account — the id of the first token of its lineage
 * (the one `muster admin api-token` made): what it mints acts as it, as an account's tokens act as the account,
 * so minting children gives no one more names (nor more shares of the audit). A token's own name is chosen by
 * whoever mints it, so it never stands for the principal: a token named `superadmin` is not her (docs/accounts-audit.md).
 */
export function principalName(p: Principal): string {
  return p.account ?? (p.token ? `token:${p.token.root}` : `token:${p.name}`)
}

/** A check that may refuse password login before any credential is read (federation's local door). */
export type LoginGate = () => MusterError | null | Promise<MusterError | null>

/**
 * The local door of an office (item 5): `membership` names the
 * office membership (token fingerprint) when the Platform is joined; `closed`
 * is the refusal a local credential gets while it is joined and no break-glass
 * is in force. A standalone Platform's door is open and names no membership.
 */
export interface LocalDoor {
  membership: string | null
  closed: MusterError | null
  /** The controller answered that this membership is over (revoked, or its token superseded by a rotate): why. */
  ended?: string | null
}
const OPEN_DOOR: LocalDoor = { membership: null, closed: null }

export function hashPassword(password: string): Promise<string> {
  return Bun.password.hash(password, { algorithm: 'argon2id', memoryCost: 19456, timeCost: 2 })
}

export class Auth {
  readonly loginGates: LoginGate[] = []
  /** The local door (federation installs it); a standalone Platform's is open. */
  door: () => Promise<LocalDoor> = () => Promise.resolve(OPEN_DOOR)
  /** The principal of a request, resolved once (the audit hook and the route ask for the same headers). */
  private readonly resolved = new WeakMap<Headers, Promise<Principal | null>>()
  /** Failed-login brakes for POST /login (docs/security.md). */
  readonly throttle: LoginThrottle = new LoginThrottle(() => this.now())
  private dummyHash: Promise<string> | undefined
  /**
   * `serve --oidc-only`: people sign in with the identity provider; password login,
   * password sessions and the login tokens of local accounts work only for an account
   * a host's `muster admin break-glass` opened (for 12 hours). Host-made tokens stay.
   */
  passwordOff: { provider: string } | null = null

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
    if (this.passwordOff && !(account && (await this.passwordOpen(account.name)))) throw this.passwordOffRefusal()
    const hash = account?.password_hash ?? (await (this.dummyHash ??= hashPassword(randomSecret())))
    const ok = await Bun.password.verify(password, hash).catch(() => false)
    const now = this.now()
    if (!ok || !account || account.disabled || !account.password_hash || expired(account.expires_at, now)) {
      throw new MusterError('login-refused', 'Login refused: unknown account or wrong password.')
    }
    const sessionId = randomSecret()
    // Opened on a joined office (a break-glass holds the door open): it names the membership, and ends when the door closes.
    const { membership } = await this.door()
    await pruneSessions(this.db, now)
    const idHash = this.digest(sessionId)
    await insertSession(this.db, idHash, account.name, now, now + SESSION_TTL_MS)
    if (membership) await markSessionMembership(this.db, idHash, membership)
    return { sessionId, account: account.name }
  }

  /** Under --oidc-only: a break-glass opened password login for this account. */
  private passwordOpen(account: string): Promise<boolean> {
    return passwordBreakGlassSince(this.db, account, this.now() - PASSWORD_BREAK_GLASS_MS)
  }

  private passwordOffRefusal(): MusterError {
    return new MusterError('local-login-disabled', `Password login is off on this Platform (serve --oidc-only): sign in with ${this.passwordOff?.provider ?? 'the identity provider'} (\`muster login --sso\`, or the dashboard's button). On the Platform's host, \`muster admin break-glass ACCOUNT\` opens it for one account for 12 hours.`)
  }

  /** The keyed digest of a secret (session ids, token secrets, sign-in flow states): what the store keeps. */
  digestSecret(secret: string): string {
    return this.digest(secret)
  }

  /** Opens a session for an sso account after a verified sign-in; it ends at `expiresAt` (the provider's ID token, 12 h at most). */
  async openSsoSession(account: string, expiresAt: number): Promise<string> {
    const sessionId = randomSecret()
    const now = this.now()
    await pruneSessions(this.db, now)
    await insertSession(this.db, this.digest(sessionId), account, now, expiresAt, { origin: 'sso' })
    return sessionId
  }

  /** Ends a session; whether there was one to end. */
  async logout(sessionId: string): Promise<boolean> {
    return deleteSession(this.db, this.digest(sessionId))
  }

  /**
   * Opens a session for an account without a password (a redeemed vouch): at most `roleCap`, at most 12 hours,
   * nothing that outlives it (VOUCHED_WITHHELD), and bound to the membership (token fingerprint) it was vouched
   * under: it ends with it (detach, a rotated token, a revoke), as a break-glass session ends with its door.
   */
  async openVouchedSession(account: string, roleCap: Role, membership: string): Promise<string> {
    const sessionId = randomSecret()
    const now = this.now()
    const idHash = this.digest(sessionId)
    await this.db.tx(async (t) => {
      await insertSession(t, idHash, account, now, now + VOUCHED_SESSION_TTL_MS, { origin: 'vouch', roleCap })
      await markSessionMembership(t, idHash, membership)
    })
    return sessionId
  }

  /** `parentId`: the token it is minted by; revoking that one revokes this one (item 7). */
  async mintApiToken(opts: { name: string; role: Role; account?: string | null; expiresAt?: number | null; origin?: ApiTokenOrigin; now?: number; parentId?: string; rootId?: string }): Promise<{ token: string; id: string; expiresAt: number | null }> {
    const id = randomId(16)
    const secret = randomSecret()
    const expiresAt = opts.expiresAt ?? null
    await this.db.tx(async (t) => {
      await insertApiToken(t, { id, name: opts.name, secretHash: this.digest(secret), role: opts.role, account: opts.account ?? null, now: opts.now ?? this.now(), expiresAt, origin: opts.origin, rootId: opts.rootId ?? null })
      if (opts.parentId) await recordTokenParent(t, id, opts.parentId)
    })
    return { token: `mat_${id}.${secret}`, id, expiresAt }
  }

  /** Refuses to tie a token to a missing account, or to one whose own role is lesser than the token's. */
  async assertAccountMayHold(account: string, role: Role): Promise<void> {
    const row = await getAccount(this.db, account)
    if (!row) throw new MusterError('not-found', `No account named ${account}.`)
    if (!isRole(row.role) || lowerRole(role, row.role) !== role) throw new MusterError('forbidden', `Account ${account} is ${row.role}; it cannot hold a ${role} token.`)
  }

  /** Sets a password, ending the account's sessions and revoking the tokens its logins made (docs/security.md). */
  async setPassword(account: string, password: string): Promise<{ sessions: number; tokens: number }> {
    const row = await getAccount(this.db, account)
    if (!row) throw new MusterError('not-found', `No account named ${account}.`)
    // An sso account's credential is the identity provider's: muster never gives it a password.
    if (row.origin === 'sso') throw new MusterError('conflict', `${account} signs in with the identity provider (kind sso) and has no password; change it at the provider, or name a local account.`)
    const hash = await hashPassword(password)
    // One transaction: a crash between the new password and the end of the old sessions would leave them working under it.
    return this.db.tx(async (t) => {
      await setPasswordHash(t, account, hash)
      return endAccountSessions(t, account, this.now())
    })
  }

  /**
   * The principal behind a request, or null when it carries no operator
   * credential. On a joined office whose door is closed, a local credential
   * (an API token, a password session) is refused with the closed door's words.
   */
  authenticate(headers: Headers): Promise<Principal | null> {
    let p = this.resolved.get(headers)
    if (!p) {
      p = this.resolve(headers)
      this.resolved.set(headers, p)
    }
    return p
  }

  private resolve(headers: Headers): Promise<Principal | null> {
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
    if (!principalCan(p, permission)) throw vouchedRefusal(permission)
    return p
  }

  /**
   * Any operator (routes that need no one permission: whoami, the caller's own tokens): 401 without
   * credentials; a `metrics` token is refused (403), since it reads GET /metrics and nothing else.
   */
  async requireOperator(headers: Headers): Promise<Principal> {
    const p = await this.authenticate(headers)
    if (!p) throw new MusterError('unauthorized', 'Authentication required.')
    if (p.role === 'metrics') throw new MusterError('forbidden', 'A metrics token reads GET /metrics only.')
    return p
  }

  private async fromApiToken(token: string): Promise<Principal | null> {
    // Every API token is local: while the door is closed it is suspended, decided before the token is read.
    const door = await this.door()
    if (door.closed) throw suspended(door.closed)
    const m = API_TOKEN.exec(token)
    if (!m) return null
    const now = this.now()
    // Revoked or expired tokens are not found: every request reads the store, so a revocation holds at once on every Platform.
    const row = await getApiToken(this.db, m[1]!, now)
    if (!row || !safeEqual(row.secret_hash, this.digest(m[2]!)) || !isRole(row.role)) return null
    let role: Role = row.role
    if (row.account) {
      const acct = await getAccount(this.db, row.account)
      if (!acct || acct.disabled || expired(acct.expires_at, now) || !isRole(acct.role)) return null
      // A token never does more than its account may now: a demotion holds at once for every token of the account.
      role = lowerRole(row.role, acct.role)
      // Under --oidc-only a local account's login tokens are its password's: they wait for a break-glass.
      if (this.passwordOff && row.origin === 'login' && acct.origin !== 'sso' && !(await this.passwordOpen(acct.name))) throw new MusterError('unauthorized', this.passwordOffRefusal().message)
    }
    await touchApiToken(this.db, row.id, now)
    return { kind: 'api-token', name: row.name, account: row.account, role, token: { id: row.id, origin: row.origin, expiresAt: row.expires_at === null ? null : Number(row.expires_at), root: row.root_id ?? row.id } }
  }

  private async fromSession(sid: string): Promise<Principal | null> {
    const now = this.now()
    const idHash = this.digest(sid)
    const row = await findSession(this.db, idHash, now)
    if (!row) return null
    const acct = await getAccount(this.db, row.account)
    if (!acct || acct.disabled || expired(acct.expires_at, now) || !isRole(acct.role)) return null
    if (row.origin === 'vouch') {
      // The lower of what the vouch granted and what the account holds now; a cap that is no role grants nothing.
      if (!row.role_cap || !isRole(row.role_cap)) return null
      // Bound to the membership it was vouched under: detached, rotated away or ended by the controller, it ends.
      const door = await this.door()
      const openedUnder = await sessionMembership(this.db, idHash)
      if (!openedUnder || door.membership !== openedUnder || door.ended) {
        await endSession(this.db, idHash)
        return null
      }
      return { kind: 'session', name: acct.name, account: acct.name, role: lowerRole(row.role_cap, acct.role), vouched: true }
    }
    // A password session is local: suspended while the door is closed; one a break-glass let in ends when it closes.
    const door = await this.door()
    const openedUnder = await sessionMembership(this.db, idHash)
    if (openedUnder && door.membership && (door.closed || door.membership !== openedUnder)) {
      await endSession(this.db, idHash)
      if (door.closed) throw suspended(door.closed)
      return null
    }
    // An SSO session is local too: behind a closed door it is suspended like a password session.
    if (row.origin === 'sso' && !door.closed) return { kind: 'session', name: acct.name, account: acct.name, role: acct.role, sso: { expiresAt: Number(row.expires_at) } }
    if (this.passwordOff && row.origin !== 'sso' && !(await this.passwordOpen(acct.name))) return null
    if (door.closed) throw suspended(door.closed)
    return { kind: 'session', name: acct.name, account: acct.name, role: acct.role, ...(openedUnder ? { breakGlass: true } : {}) }
  }
}

/** Whether a principal holds a permission: its role grants it, and a vouched session is not withheld it. */
export function principalCan(p: Principal, permission: Permission): boolean {
  return roleCan(p.role, permission) && !(p.vouched && VOUCHED_WITHHELD.has(permission))
}

/** What a vouched session gets for what would outlive it (docs/federation.md, "What a vouched session cannot do"). */
export function vouchedRefusal(what: string): MusterError {
  return new MusterError(
    'forbidden',
    `A session opened by a vouch cannot do this (${what}): it would outlive the session. This office's own people do it, on its host (\`muster admin api-token --break-glass\`, recorded and reported to the controller).`,
  )
}

/** An account's expiry has passed (null: it never expires). */
export function expired(expiresAt: number | null | undefined, now: number): boolean {
  return expiresAt !== null && expiresAt !== undefined && Number(expiresAt) <= now
}

/** A local credential on a closed door: 401, with the words a password login gets there. */
function suspended(closed: MusterError): MusterError {
  return new MusterError('unauthorized', closed.message)
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
