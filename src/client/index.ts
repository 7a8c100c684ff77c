// The muster SDK: one typed function per route. The CLI uses only this.
//   import { createClient } from 'muster/client'
import { createTransport, type ClientOptions } from './http.ts'
import { nodesApi } from './nodes.ts'
import { projectsApi } from './projects.ts'
import { federationApi } from './federation.ts'
import { cloudApi } from './cloud.ts'

export type { ClientOptions } from './http.ts'
export type * from './nodes.ts'
export type * from './projects.ts'
export type * from './federation.ts'
export type * from './cloud.ts'
export type { PageOptions } from './paging.ts'
export { MusterError } from '../errors.ts'

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
    auth: {
      login: (identifier: string, password: string) => call<{ ok: boolean; account: string }>('POST', '/login', { identifier, password }),
      whoami: () => call<{ name: string; account: string | null; role: string; kind: string }>('GET', '/api/v1/whoami'),
      mintApiToken: (body: { name?: string; role?: string }) => call<{ token: string; name: string; role: string }>('POST', '/api/v1/api-tokens', body),
    },
  }
}

export type Client = ReturnType<typeof createClient>
