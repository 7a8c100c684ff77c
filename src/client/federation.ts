// SDK for federation: the controller's routes (tokens, directory, vouch,
// place, break-glass reports) and an office's own (vouch redemption, local
// authority, identity writes, placed projects).
import type { Transport } from './http.ts'
import type { DeployBody as OfficeProjectSpec } from './projects.ts'

export type OfficeStatus = 'active' | 'revoked'

export interface OfficeTokenInfo {
  officeId: string
  label: string | null
  status: OfficeStatus
  createdAt: string | null
  lastSeenAt: string | null
}

export interface OfficeProjectStatus {
  name: string
  replicas: number
  state: 'pending' | 'running' | 'failed' | 'stopped'
  running: number
  detail?: string
}

export interface OfficeInfo {
  officeId: string
  label: string | null
  advertiseUrl: string | null
  fresh: boolean
  lastSeenAt: string | null
  status: OfficeStatus
  version: string | null
  projects: OfficeProjectStatus[]
}

export type { DeployBody as OfficeProjectSpec } from './projects.ts'

export interface OfficeBreakGlassReport {
  officeId: string
  account: string | null
  at: string
  reportedAt: string
}

export interface OfficeLocalAuthority {
  joined: boolean
  officeId: string | null
  localLoginAllowed: boolean
  breakGlass: { id: string; account: string | null; at: string; reportedAt: string | null } | null
  detachedAt: string | null
  controller: { url: string | null; state: string; lastContactAt: string | null } | null
}

export interface OfficeIdentityWrite {
  at: string
  owner: string
  action: 'created' | 'linked'
  role: string
  reason: string
}

const office = (id: string) => `/api/v1/federation/offices/${encodeURIComponent(id)}`

export function federationApi(call: Transport) {
  return {
    mint: (body: { officeId: string; label?: string; note?: string; rotate?: boolean }) => call<{ officeId: string; token: string }>('POST', '/api/v1/federation/join-tokens', body),
    tokens: () => call<{ tokens: OfficeTokenInfo[] }>('GET', '/api/v1/federation/join-tokens'),
    revoke: (officeId: string) => call<{ officeId: string; status: 'revoked' }>('POST', `/api/v1/federation/join-tokens/${encodeURIComponent(officeId)}/revoke`),
    offices: () => call<{ offices: OfficeInfo[] }>('GET', '/api/v1/federation/offices'),
    vouch: (officeId: string) => call<{ vouch: string; redeemUrl: string | null; expiresAt: string }>('POST', `${office(officeId)}/vouch`),
    place: (officeId: string, spec: OfficeProjectSpec) => call<{ officeId: string; project: OfficeProjectStatus }>('POST', `${office(officeId)}/projects`, spec),
    breakGlassReports: () => call<{ reports: OfficeBreakGlassReport[] }>('GET', '/api/v1/federation/break-glass'),
    /** On an office: trade a vouch for a session (the cookie comes back in Set-Cookie). */
    redeemVouch: (vouch: string) => call<{ ok: true; account: string; created: boolean; role: string }>('POST', '/api/office/vouch', { vouch }),
    localAuthority: () => call<OfficeLocalAuthority>('GET', '/api/v1/office/local-authority'),
    identityWrites: () => call<{ writes: OfficeIdentityWrite[] }>('GET', '/api/v1/office/identity-writes'),
    placedProjects: () => call<{ projects: (Omit<OfficeProjectSpec, 'env'> & { envKeys: string[]; placedAt: string; status: OfficeProjectStatus })[] }>('GET', '/api/v1/office/projects'),
  }
}
