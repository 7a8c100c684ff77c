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
import type { ApiTokenRevoked, ApiTokenView, Health, LoginAnswer, MintedApiToken, MintToken, Whoami } from '../wire/accounts.ts'
import type { InferInput } from 'valibot'

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
export type { ApiTokenView as ApiToken, Health, MintedApiToken, Whoami } from '../wire/accounts.ts'

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
      login: (identifier: string, password: string) => call<LoginAnswer>('POST', '/login', { identifier, password }),
      whoami: () => call<Whoami>('GET', '/api/v1/whoami'),
      /** A token of the caller's role or a lesser one; made with a login session it is a login token (30 days at most). */
      mintApiToken: (body: InferInput<typeof MintToken>) => call<MintedApiToken>('POST', '/api/v1/api-tokens', body),
      /** The caller's own live tokens (every account's for server.accounts.manage). */
      listApiTokens: () => call<{ tokens: ApiTokenView[] }>('GET', '/api/v1/api-tokens'),
      /** Revokes at once, on every Platform sharing the store, with every token minted from it (its descendants). */
      revokeApiToken: (id: string) => call<ApiTokenRevoked>('DELETE', `/api/v1/api-tokens/${encodeURIComponent(id)}`),
    },
  }
}

export type Client = ReturnType<typeof createClient>
