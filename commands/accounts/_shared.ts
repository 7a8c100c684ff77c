// Shared by the accounts verbs: names and roles checked before anything is sent.
import { UsageError } from '../_args.ts'

const ROLES = ['viewer', 'operator', 'superadmin'] as const
export type RoleArg = (typeof ROLES)[number]

export function checkRole(value: string | undefined, flag: string): RoleArg {
  if (!ROLES.includes(value as RoleArg)) throw new UsageError(`${flag} must be viewer, operator or superadmin, got "${value ?? ''}"`)
  return value as RoleArg
}

export function checkAccount(value: string): string {
  if (!/^[A-Za-z0-9][A-Za-z0-9._@-]{0,127}$/.test(value)) throw new UsageError(`NAME must be an account name (letters, digits and . _ @ -), got "${value.slice(0, 80)}"`)
  return value
}

/** --expires: an ISO 8601 time, or a duration from now (90d, 12h, 30m). */
export function expiresArg(value: string | undefined, now = Date.now()): string | undefined {
  if (value === undefined) return undefined
  const d = /^(\d{1,5})([dhm])$/.exec(value)
  if (d) return new Date(now + Number(d[1]) * { d: 86_400_000, h: 3_600_000, m: 60_000 }[d[2] as 'd' | 'h' | 'm']).toISOString()
  const t = Date.parse(value)
  if (!/^\d{4}-\d{2}-\d{2}/.test(value) || !Number.isFinite(t)) throw new UsageError(`--expires must be a time like 2027-01-31 or 2027-01-31T18:00:00Z, or a duration like 90d, 12h, 30m; got "${value}"`)
  if (t <= now) throw new UsageError(`--expires ${value} is in the past`)
  return new Date(t).toISOString()
}

/** What a demotion or disable ended, for people. */
export function endedLine(ended: { sessions: number; tokens: number } | undefined): string {
  return ended ? ` Ended ${ended.sessions} session(s) and revoked ${ended.tokens} token(s) made by its logins.` : ''
}
