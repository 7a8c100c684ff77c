// SDK: accounts for people and the audit. Every type is the route's own
// (src/wire/accounts.ts).
import type { InferInput } from 'valibot'
import type { Transport } from './http.ts'
import { allPages, queryString, type PageOptions } from './paging.ts'
import type { AccountChange, AccountRemoved, AccountRole, AccountView as Account, AddAccount, AuditPage } from '../wire/accounts.ts'

export type { AccountChange, AccountRole, AccountView as Account, AuditEntry as AuditRecord, AuditPage } from '../wire/accounts.ts'

export interface AuditQuery {
  /** Entries at or after this time (ISO 8601). */
  since?: string
  /** An account, or a token's name. */
  principal?: string
  /** An action (node.drain), or the start of one (node). */
  action?: string
}

export function accountsApi(call: Transport) {
  const enc = encodeURIComponent
  return {
    list: () => call<{ accounts: Account[] }>('GET', '/api/v1/accounts'),
    /** A person's account; the password is sent once and kept only as an argon2id hash. */
    add: (body: InferInput<typeof AddAccount>) => call<Account>('POST', '/api/v1/accounts', body),
    /** A lesser role ends the account's sessions and login tokens at once. */
    setRole: (name: string, role: AccountRole) => call<AccountChange>('POST', `/api/v1/accounts/${enc(name)}/role`, { role }),
    disable: (name: string) => call<AccountChange>('POST', `/api/v1/accounts/${enc(name)}/disable`),
    enable: (name: string) => call<AccountChange>('POST', `/api/v1/accounts/${enc(name)}/enable`),
    remove: (name: string) => call<AccountRemoved>('DELETE', `/api/v1/accounts/${enc(name)}`),
  }
}

export function auditApi(call: Transport) {
  const path = (q: Record<string, string | number | undefined>) => `/api/v1/audit${queryString(q)}`
  return {
    /** One page, newest first. */
    list: (q: AuditQuery & PageOptions = {}) => call<AuditPage>('GET', path({ ...q })),
    /** Every entry within the retention, newest first. */
    listAll: async (q: AuditQuery & { limit?: number } = {}) => (await allPages((cursor) => call<AuditPage>('GET', path({ ...q, cursor })), (p) => p.entries)).items,
    /** Entries newer than `after` (an entry id), oldest first: what `--follow` polls. */
    after: (after: number, q: AuditQuery & { limit?: number } = {}) => call<AuditPage>('GET', path({ ...q, after })),
  }
}
