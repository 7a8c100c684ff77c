// From verified ID token claims to a muster account: which name, which role
// (the highest any of the user's groups maps to), or why not. Pure: the
// sign-in pipeline (signin.ts) records the refusal's reason in the audit.
import { NEW_ACCOUNT_NAME } from '../../wire/accounts.ts'
import { lowerRole, type Role } from '../../wire/permissions.ts'
import type { OidcSettings } from './config.ts'

export type Claims = Record<string, unknown>

export type Mapped = { ok: true; name: string; role: Role; groups: string[] } | { ok: false; reason: string }

/** The groups a claim lists (an array of strings, or one string); anything else is no group. */
export function groupsOf(claims: Claims, claim: string): string[] {
  const value = claims[claim]
  if (typeof value === 'string') return [value]
  if (!Array.isArray(value)) return []
  return value.filter((g): g is string => typeof g === 'string').slice(0, 1000)
}

/** The highest role among the groups' mappings; `*` counts for everyone. Null when none is mapped. */
export function roleForGroups(groups: readonly string[], map: ReadonlyMap<string, Role>): Role | null {
  let best: Role | null = map.get('*') ?? null
  for (const g of groups) {
    const r = map.get(g)
    if (r) best = best === null ? r : lowerRole(best, r) === best ? r : best
  }
  return best
}

const verifiedEmail = (c: Claims): string | null => {
  const email = typeof c.email === 'string' ? c.email.toLowerCase() : null
  // Providers that send email_verified=false mean it: such an address proves nothing.
  return email && c.email_verified !== false ? email : null
}

/** The account name: the verified e-mail, else preferred_username, else sub, lowercased; null when none has an account name's shape. */
export function accountNameFor(c: Claims): string | null {
  for (const candidate of [verifiedEmail(c), c.preferred_username, c.sub]) {
    if (typeof candidate !== 'string') continue
    const name = candidate.toLowerCase()
    if (NEW_ACCOUNT_NAME.test(name)) return name
  }
  return null
}

/**
 * Who may sign in, as whom, with which role:
 *   1. the e-mail domain is allowed (when --oidc-allowed-domains is given; Google's `hd` counts too)
 *   2. the claims give a name an account may have
 *   3. a group maps to a role
 */
export function mapIdentity(c: Claims, s: Pick<OidcSettings, 'groupsClaim' | 'roleMap' | 'allowedDomains'>): Mapped {
  if (s.allowedDomains.length > 0) {
    const email = verifiedEmail(c)
    const domain = email?.slice(email.lastIndexOf('@') + 1) ?? null
    const hd = typeof c.hd === 'string' ? c.hd.toLowerCase() : null
    if (!(domain && s.allowedDomains.includes(domain)) && !(hd && s.allowedDomains.includes(hd))) {
      return { ok: false, reason: `domain not allowed${domain ? ` (${domain.slice(0, 100)})` : ' (no verified e-mail)'}` }
    }
  }
  const name = accountNameFor(c)
  if (!name) return { ok: false, reason: 'no usable account name (email, preferred_username and sub are not name-shaped)' }
  const groups = groupsOf(c, s.groupsClaim)
  const role = roleForGroups(groups, s.roleMap)
  if (!role) return { ok: false, reason: `no mapped group (${groups.length} group${groups.length === 1 ? '' : 's'} in claim ${s.groupsClaim})` }
  return { ok: true, name, role, groups }
}
