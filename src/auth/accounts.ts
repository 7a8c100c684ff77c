// Accounts for people: add with a role, list, change role, disable
// and enable, remove. A demotion, a disable or a removal ends the account's
// sessions and the tokens its logins made (with their descendants) at once;
// its other tokens never act above the account's current role (auth.ts). The
// last live superadmin cannot be demoted, disabled or removed.
import { MusterError } from '../errors.ts'
import type { Db } from '../store/db.ts'
import { createAccount, deleteAccount, endAccountSessions, listAccountRows, setAccountDisabled, setAccountRole, type Guarded } from '../store/account-admin.ts'
import { getAccount } from '../store/accounts.ts'
import { hashPassword } from './auth.ts'
import { isRole, lowerRole, type Role } from '../wire/permissions.ts'
import { NEW_ACCOUNT_NAME, type AccountChange, type AccountRemoved, type AccountView } from '../wire/accounts.ts'

export const MIN_PASSWORD_LENGTH = 12

const iso = (t: number | null) => (t === null ? null : new Date(Number(t)).toISOString())

export function checkAccountName(name: string): string {
  if (!NEW_ACCOUNT_NAME.test(name)) throw new MusterError('invalid-request', `Invalid name: expected lowercase letters, digits and . _ @ - (at most 64, starting with a letter or digit), got "${name.slice(0, 80)}"`, { field: 'name' })
  return name
}

function lastSuperadmin(name: string, act: string): MusterError {
  return new MusterError('conflict', `${name} is the last superadmin; ${act} it would leave nobody able to manage accounts. Make another account superadmin first (muster accounts set-role NAME superadmin).`)
}

function guard(r: Guarded, name: string, act: string): void {
  if (r === 'not-found') throw new MusterError('not-found', `No account named ${name}.`)
  if (r === 'last-superadmin') throw lastSuperadmin(name, act)
}

export class Accounts {
  constructor(private readonly db: Db, private readonly now: () => number) {}

  async list(): Promise<{ accounts: AccountView[] }> {
    const rows = await listAccountRows(this.db, this.now())
    return {
      accounts: rows.map((r) => ({
        name: r.name,
        role: r.role,
        origin: r.origin,
        disabled: Boolean(Number(r.disabled)),
        hasPassword: Boolean(Number(r.has_password)),
        createdAt: iso(r.created_at)!,
        expiresAt: iso(r.expires_at),
        sessions: Number(r.sessions),
      })),
    }
  }

  async create(b: { name: string; role: Role; password: string; expiresAt?: string }): Promise<AccountView> {
    const name = checkAccountName(b.name)
    if (b.password.length < MIN_PASSWORD_LENGTH) throw new MusterError('invalid-request', `Invalid password: at least ${MIN_PASSWORD_LENGTH} characters.`, { field: 'password' })
    const now = this.now()
    let expiresAt: number | null = null
    if (b.expiresAt !== undefined) {
      expiresAt = Date.parse(b.expiresAt)
      if (!Number.isFinite(expiresAt) || expiresAt <= now) throw new MusterError('invalid-request', 'Invalid expiresAt: expected a time in the future (ISO 8601).', { field: 'expiresAt' })
    }
    if (!(await createAccount(this.db, { name, role: b.role, passwordHash: await hashPassword(b.password), expiresAt, now }))) {
      throw new MusterError('conflict', `An account named ${name} exists already; pick another name, or change it with muster accounts set-role / disable.`)
    }
    return this.view(name)
  }

  /** A new role; a lesser one ends the account's sessions and login tokens at once. */
  async setRole(name: string, role: Role): Promise<AccountChange> {
    const r = await setAccountRole(this.db, name, role, this.now())
    guard(r.result, name, 'demoting')
    const previous = r.previous && isRole(r.previous) ? r.previous : undefined
    const demoted = previous === undefined || (previous !== role && lowerRole(previous, role) === role)
    if (!demoted) return this.view(name)
    return { ...(await this.view(name)), ended: await endAccountSessions(this.db, name, this.now()) }
  }

  async setDisabled(name: string, disabled: boolean): Promise<AccountChange> {
    guard(await setAccountDisabled(this.db, name, disabled, this.now()), name, 'disabling')
    if (!disabled) return this.view(name)
    return { ...(await this.view(name)), ended: await endAccountSessions(this.db, name, this.now()) }
  }

  async remove(name: string): Promise<AccountRemoved> {
    guard(await deleteAccount(this.db, name, this.now()), name, 'removing')
    return { name, removed: true }
  }

  private async view(name: string): Promise<AccountView> {
    const row = await getAccount(this.db, name)
    if (!row) throw new MusterError('not-found', `No account named ${name}.`)
    const found = (await this.list()).accounts.find((a) => a.name === name)
    return found!
  }
}
