// The wire contract of people's routes: accounts (/api/v1/accounts…), login,
// API tokens (/api/v1/api-tokens…), who the caller is, the audit of every
// action (/api/v1/audit) and /healthz. Shared by the routes, the services
// and the SDK (src/client/accounts.ts, src/client/index.ts).
import * as v from 'valibot'
import { ROLES, TOKEN_ROLES, type Permission, type Role } from './permissions.ts'

// ---- requests -------------------------------------------------------------

/** What a new account may be called: lowercase letters, digits and . _ @ -, starting with a letter or digit; at most 64. */
export const NEW_ACCOUNT_NAME = /^[a-z0-9][a-z0-9._@-]{0,63}$/
const RoleName = v.picklist(ROLES, 'expected viewer, operator or superadmin')
/** POST /api/v1/accounts: the password is sent once and kept only as an argon2id hash. */
export const AddAccount = v.object({
  name: v.pipe(v.string(), v.regex(NEW_ACCOUNT_NAME, 'expected lowercase letters, digits and . _ @ - (at most 64, starting with a letter or digit)')),
  role: RoleName,
  password: v.pipe(v.string(), v.minLength(12, 'expected at least 12 characters'), v.maxLength(1024, 'expected at most 1024 characters')),
  expiresAt: v.optional(v.pipe(v.string(), v.isoTimestamp('expected an ISO 8601 time like 2027-01-31T00:00:00Z'))),
})
/** POST /api/v1/accounts/:name/role */
export const SetRole = v.object({ role: RoleName })

/** POST /login */
export const Login = v.object({
  identifier: v.pipe(v.string(), v.minLength(1), v.maxLength(256)),
  password: v.pipe(v.string(), v.minLength(1), v.maxLength(1024)),
})
/** POST /api/v1/api-tokens: a token of the caller's role or a lesser one. */
export const MintToken = v.object({
  name: v.optional(v.pipe(v.string(), v.regex(/^[\w .@-]{1,64}$/, 'expected 1–64 letters, digits, spaces or ._@-'))),
  role: v.optional(v.picklist(TOKEN_ROLES)),
  ttlDays: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(3650))),
})
/** DELETE /api/v1/api-tokens/:id */
export const TokenId = v.object({ id: v.pipe(v.string(), v.regex(/^[a-z2-7]{16}$/, 'expected a token id (16 characters, as `muster tokens list` shows)')) })

// ---- answers --------------------------------------------------------------

export type AccountRole = Role

/** An account for a person (GET /api/v1/accounts lists these). */
export interface AccountView {
  name: string
  role: string
  /** local: made here; vouch: created by a controller's vouch (no usable password). */
  origin: string
  disabled: boolean
  hasPassword: boolean
  createdAt: string
  expiresAt: string | null
  /** Live sessions. */
  sessions: number
}
/** What a demotion or a disable ended at once. */
export type AccountChange = AccountView & { ended?: { sessions: number; tokens: number } }
/** DELETE /api/v1/accounts/:name */
export interface AccountRemoved {
  name: string
  removed: true
}

/** POST /login (JSON) */
export interface LoginAnswer {
  ok: boolean
  account: string
}

/** GET /api/v1/whoami */
export interface Whoami {
  name: string
  account: string | null
  role: Role
  kind: string
  permissions: Permission[]
}

/** An API token as listed (GET /api/v1/api-tokens); the secret is never shown again. */
export interface ApiTokenView {
  id: string
  name: string
  role: string
  account: string | null
  createdAt: string
  lastUsedAt: string | null
  /** null: never expires. */
  expiresAt: string | null
}
/** POST /api/v1/api-tokens */
export interface MintedApiToken {
  id: string
  /** Shown once. */
  token: string
  name: string
  role: string
  expiresAt: string | null
}
/** DELETE /api/v1/api-tokens/:id: revoked at once, with every token minted from it (its descendants). */
export interface ApiTokenRevoked {
  id: string
  revoked: true
  descendants: number
}

/** One entry of the audit of every action (`nodes audit` keeps enrollment's own). */
export interface AuditEntry {
  id: number
  at: string
  principal: string
  principalKind: string
  tokenId: string | null
  source: string
  action: string
  target: string | null
  outcome: string
  detail: string | null
}
/** GET /api/v1/audit */
export interface AuditPage {
  entries: AuditEntry[]
  nextCursor: string | null
}

/** GET /healthz: no authentication, just liveness and version. */
export interface Health {
  ok: boolean
  version: string
}
