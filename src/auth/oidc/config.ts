// What `serve --oidc-*` (or an --oidc-config file) says about the identity
// provider: its issuer, the client muster is registered as, which claim holds
// the groups, which group gives which role, and which e-mail domains may sign
// in. The client secret is read from a file, never from argv (docs/accounts-audit.md).
import { readFileSync, statSync } from 'node:fs'
import * as v from 'valibot'
import { MusterError } from '../../errors.ts'
import { ROLES, type Role } from '../../wire/permissions.ts'

export interface OidcSettings {
  issuer: string
  clientId: string
  clientSecret: string
  /** The claim of the ID token (or userinfo) that lists the user's groups. */
  groupsClaim: string
  /** Group → role; `*` matches every user who may sign in (providers without groups, e.g. Google). */
  roleMap: ReadonlyMap<string, Role>
  /** E-mail domains that may sign in (empty: any). */
  allowedDomains: readonly string[]
  /** Password login is off: only host-local commands and break-glass remain. */
  only: boolean
  /** The name on the dashboard's button ("Sign in with …"). */
  displayName: string
}

/** What the flags (or the file) give, before the secret is read. */
export interface OidcOptions {
  issuer: string
  clientId: string
  clientSecretFile: string
  groupsClaim?: string
  roleMap: string
  allowedDomains?: string
  only?: boolean
  displayName?: string
}

const OidcFile = v.object({
  issuer: v.pipe(v.string(), v.minLength(1)),
  clientId: v.pipe(v.string(), v.minLength(1), v.maxLength(256)),
  clientSecretFile: v.pipe(v.string(), v.minLength(1)),
  groupsClaim: v.optional(v.pipe(v.string(), v.regex(/^[\w.:/-]{1,128}$/))),
  roleMap: v.union([v.string(), v.record(v.string(), v.picklist(ROLES))]),
  allowedDomains: v.optional(v.union([v.string(), v.array(v.string())])),
  only: v.optional(v.boolean()),
  displayName: v.optional(v.pipe(v.string(), v.maxLength(64))),
})

const bad = (what: string) => new MusterError('not-configured', what)

/** `group=role,group=role`; a group is any text without `=` or `,` (Entra ID's are object ids). */
export function parseRoleMap(text: string): Map<string, Role> {
  const map = new Map<string, Role>()
  for (const part of text.split(',').map((s) => s.trim()).filter(Boolean)) {
    const i = part.lastIndexOf('=')
    const group = i > 0 ? part.slice(0, i).trim() : ''
    const role = part.slice(i + 1).trim()
    if (!group) throw bad(`--oidc-role-map: "${part.slice(0, 80)}" is not group=role (e.g. --oidc-role-map 'muster-admins=superadmin,developers=operator').`)
    if (!(ROLES as readonly string[]).includes(role)) throw bad(`--oidc-role-map: ${JSON.stringify(role.slice(0, 40))} for group ${JSON.stringify(group.slice(0, 80))} is no role; roles are ${ROLES.join(', ')}.`)
    map.set(group, role as Role)
  }
  if (map.size === 0) throw bad(`--oidc-role-map is empty: map at least one group to a role (e.g. --oidc-role-map 'muster-admins=superadmin'); a user none of whose groups is mapped cannot sign in.`)
  return map
}

export function parseDomains(text: string | readonly string[] | undefined): string[] {
  const list = typeof text === 'string' ? text.split(',') : (text ?? [])
  return list.map((d) => d.trim().toLowerCase().replace(/^@/, '')).filter(Boolean)
}

const LOOPBACK = /^(127\.\d+\.\d+\.\d+|\[::1\]|localhost)$/

/** An issuer is an https URL without query or fragment; plain http only on loopback (tests, a local provider). */
export function checkIssuer(issuer: string): URL {
  let url: URL
  try {
    url = new URL(issuer)
  } catch {
    throw bad(`--oidc-issuer ${JSON.stringify(issuer.slice(0, 200))} is not a URL; give the provider's issuer, e.g. https://login.example.com/realms/acme (its /.well-known/openid-configuration must answer).`)
  }
  if (url.search || url.hash || url.username || url.password) throw bad('--oidc-issuer must be the bare issuer URL (no query, fragment or credentials).')
  if (url.protocol === 'http:' && !LOOPBACK.test(url.hostname)) throw bad(`--oidc-issuer ${url.origin} is plain http: an issuer must be https (plain http is accepted only on loopback, for tests).`)
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw bad(`--oidc-issuer must be an https URL, not ${url.protocol}`)
  return url
}

export function isLoopbackUrl(url: URL): boolean {
  return LOOPBACK.test(url.hostname)
}

function readSecretFile(file: string): string {
  let mode: number
  try {
    mode = statSync(file).mode
  } catch {
    throw bad(`--oidc-client-secret-file ${file} cannot be read: put the client secret the provider gave muster in a file only this user can read (chmod 600).`)
  }
  if (mode & 0o077) throw bad(`--oidc-client-secret-file ${file} is readable by other users (mode ${(mode & 0o777).toString(8)}): chmod 600 ${file}.`)
  const secret = readFileSync(file, 'utf8').replace(/\r?\n$/, '')
  if (!secret || /[\r\n]/.test(secret)) throw bad(`--oidc-client-secret-file ${file} must hold the client secret on one line.`)
  return secret
}

/** Reads an --oidc-config JSON file (the same fields as the flags, camelCase). */
export function readOidcFile(file: string): OidcOptions {
  let raw: unknown
  try {
    raw = JSON.parse(readFileSync(file, 'utf8'))
  } catch (e) {
    throw bad(`--oidc-config ${file}: ${(e as Error).message.slice(0, 200)}`)
  }
  const r = v.safeParse(OidcFile, raw)
  if (!r.success) {
    const issue = r.issues[0]
    throw bad(`--oidc-config ${file}: ${v.getDotPath(issue) ?? 'the file'}: ${issue.message}`)
  }
  const o = r.output
  return { ...o, roleMap: typeof o.roleMap === 'string' ? o.roleMap : Object.entries(o.roleMap).map(([g, role]) => `${g}=${role}`).join(','), allowedDomains: parseDomains(o.allowedDomains).join(',') }
}

/** Checks the options and reads the secret: every refusal says what to change. */
export function resolveOidc(o: OidcOptions): OidcSettings {
  const url = checkIssuer(o.issuer)
  if (!o.clientId) throw bad('--oidc-client-id is required with --oidc-issuer: the client id the provider gave muster.')
  if (!o.clientSecretFile) throw bad('--oidc-client-secret-file is required with --oidc-issuer (the secret never goes on the command line).')
  return {
    // Exactly as given: the ID token's iss must equal it (some issuers end with a slash).
    issuer: o.issuer,
    clientId: o.clientId,
    clientSecret: readSecretFile(o.clientSecretFile),
    groupsClaim: o.groupsClaim || 'groups',
    roleMap: parseRoleMap(o.roleMap),
    allowedDomains: parseDomains(o.allowedDomains),
    only: Boolean(o.only),
    displayName: o.displayName || url.hostname,
  }
}
