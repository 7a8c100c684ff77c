// The muster SDK: one typed function per route. The CLI uses only this.
//   import { createClient } from 'muster/client'
import { createTransport, type ClientOptions } from './http.ts'
import { nodesApi } from './nodes.ts'
import { projectsApi } from './projects.ts'
import { federationApi } from './federation.ts'
import { cloudApi } from './cloud.ts'
import { accountsApi, auditApi } from './accounts.ts'
import { overviewApi } from './overview.ts'
import { releasesApi, rolloutsApi, updatesNodeApi } from './releases.ts'

export type { ClientOptions } from './http.ts'
export type * from './nodes.ts'
export type * from './projects.ts'
export type * from './federation.ts'
export type * from './cloud.ts'
export type * from './accounts.ts'
export type * from './overview.ts'
export type * from './releases.ts'
export type { PageOptions } from './paging.ts'
export { MusterError } from '../errors.ts'

export interface ApiToken {
  id: string
  name: string
  role: string
  account: string | null
  createdAt: string
  lastUsedAt: string | null
  /** null: never expires. */
  expiresAt: string | null
}
export interface MintedApiToken {
  id: string
  /** Shown once. */
  token: string
  name: string
  role: string
  expiresAt: string | null
}

export interface Health {
  ok: boolean
  version: string
}

export function createClient(opts: ClientOptions) {
  const call = createTransport(opts)
  return {
    url: opts.url,
    health: () => call<Health>('GET', '/healthz'),
    nodes: nodesApi(call),
    projects: projectsApi(call),
    federation: federationApi(call),
    cloud: cloudApi(call),
    accounts: accountsApi(call),
    audit: auditApi(call),
    overview: overviewApi(call),
    releases: releasesApi(call),
    rollouts: rolloutsApi(call),
    updates: updatesNodeApi(call),
    auth: {
      login: (identifier: string, password: string) => call<{ ok: boolean; account: string }>('POST', '/login', { identifier, password }),
      whoami: () => call<{ name: string; account: string | null; role: string; kind: string; permissions: string[] }>('GET', '/api/v1/whoami'),
      /** A token of the caller's role or a lesser one; made with a login session it is a login token (30 days at most). */
      mintApiToken: (body: { name?: string; role?: string; ttlDays?: number }) => call<MintedApiToken>('POST', '/api/v1/api-tokens', body),
      /** The caller's own live tokens (every account's for server.accounts.manage). */
      listApiTokens: () => call<{ tokens: ApiToken[] }>('GET', '/api/v1/api-tokens'),
      /** Revokes at once, on every Platform sharing the store, with every token minted from it (its descendants). */
      revokeApiToken: (id: string) => call<{ id: string; revoked: true; descendants: number }>('DELETE', `/api/v1/api-tokens/${encodeURIComponent(id)}`),
    },
  }
}

export type Client = ReturnType<typeof createClient>
