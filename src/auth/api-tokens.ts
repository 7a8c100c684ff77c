// Operator API tokens over the API (docs/security.md): minting with least privilege
// and a lifetime that follows where the caller's credential came from,
// listing the caller's own (all of them for server.accounts.manage), and
// revocation that holds at once (every request reads the store).
import { MusterError } from '../errors.ts'
import type { ApiTokenRow } from '../store/api-tokens.ts'
import { listLiveApiTokens } from '../store/token-lifecycle.ts'
import { revokeTokenTree } from '../store/account-admin.ts'
import type { Auth, Principal } from './auth.ts'
import { isRole, lowerRole, roleCan, type Role } from '../wire/permissions.ts'
import type { ApiTokenRevoked, ApiTokenView, MintedApiToken } from '../wire/accounts.ts'

export const DAY_MS = 86_400_000
/** Tokens made by a password login (`muster login`, the dashboard) end after this. */
export const LOGIN_TOKEN_TTL_DAYS = 30

const iso = (t: number | null) => (t === null ? null : new Date(Number(t)).toISOString())

export function tokenView(r: ApiTokenRow): ApiTokenView {
  return { id: r.id, name: r.name, role: r.role, account: r.account, createdAt: iso(r.created_at)!, lastUsedAt: iso(r.last_used_at), expiresAt: iso(r.expires_at) }
}

/**
 * Minting for a caller:
 *   0. a joined office mints nothing over the API (its local door is the controller's)
 *   1. a session opened by a vouch mints nothing (its reach ends with the session)
 *   2. the role is the caller's or a lesser one; another role needs server.accounts.manage
 *   3. the lifetime: a password session's token is a login token (30 days at most; from
 *      an sso session, no longer than that session);
 *      a token's child inherits its origin, ends no later than it, and names it as its
 *      parent: revoking the parent revokes the child (item 7)
 */
export async function mintForCaller(auth: Auth, p: Principal, now: number, b: { name?: string; role?: Role; ttlDays?: number }): Promise<MintedApiToken> {
  if ((await auth.door()).membership) throw new MusterError('local-login-disabled', 'This Platform has joined a controller as an office: API tokens are not minted over its API. Reach it through the controller (a vouch), or mint one on its host with `muster admin api-token --break-glass` (recorded and reported to the controller).')
  if (p.vouched) throw new MusterError('forbidden', 'A session opened by a vouch cannot mint API tokens; on this office, log in with a local account (or ask its operators) for one.')
  const role = b.role ?? p.role
  if (role !== p.role && !roleCan(p.role, 'server.accounts.manage')) throw new MusterError('forbidden', 'Permission server.accounts.manage is required to mint a token of another role.')
  if (lowerRole(role, p.role) !== role) throw new MusterError('forbidden', `A ${p.role} cannot mint a ${role} token.`)
  const asked = b.ttlDays === undefined ? null : now + b.ttlDays * DAY_MS
  let expiresAt: number | null
  let origin: 'login' | 'api'
  if (p.kind === 'session') {
    origin = 'login'
    expiresAt = Math.min(asked ?? Infinity, now + LOGIN_TOKEN_TTL_DAYS * DAY_MS)
    // A session from the identity provider ends when its ID token does: so does what it mints.
    if (p.sso) expiresAt = Math.min(expiresAt, p.sso.expiresAt)
  } else {
    origin = p.token?.origin === 'login' ? 'login' : 'api'
    const parent = p.token?.expiresAt ?? null
    expiresAt = asked === null ? parent : parent === null ? asked : Math.min(asked, parent)
  }
  const name = b.name ?? `${p.name}-cli`
  const parentId = p.kind === 'api-token' ? p.token?.id : undefined
  // The child's lineage starts where its parent's does: a token of no account mints tokens that act as it.
  const rootId = p.kind === 'api-token' ? p.token?.root : undefined
  const minted = await auth.mintApiToken({ name, role, account: p.account, expiresAt, origin, now, ...(parentId ? { parentId } : {}), ...(rootId ? { rootId } : {}) })
  return { id: minted.id, token: minted.token, name, role, expiresAt: iso(minted.expiresAt) }
}

/**
 * The caller's own live tokens, or all for server.accounts.manage. Own: the calling
 * token itself, and its account's tokens of the caller's role or a lesser one (a
 * viewer token of an account neither sees nor revokes that account's superadmin token).
 */
export async function listForCaller(auth: Auth, p: Principal, now: number): Promise<{ tokens: ApiTokenView[] }> {
  const all = roleCan(p.role, 'server.accounts.manage')
  const rows = await listLiveApiTokens(auth.store, now, all ? undefined : p.account)
  const own = all ? rows : rows.filter((r) => r.id === p.token?.id || (p.account !== null && isRole(r.role) && lowerRole(r.role, p.role) === r.role))
  return { tokens: own.map(tokenView) }
}

/** Revokes one of the caller's tokens (any, for server.accounts.manage) and every token descended from it; another's is as unknown as a missing one. */
export async function revokeForCaller(auth: Auth, p: Principal, now: number, id: string): Promise<ApiTokenRevoked> {
  const visible = (await listForCaller(auth, p, now)).tokens.some((t) => t.id === id)
  const revoked = visible ? await revokeTokenTree(auth.store, id, now) : 0
  if (revoked === 0) throw new MusterError('not-found', `No live API token ${id} of yours.`)
  return { id, revoked: true, descendants: revoked - 1 }
}
