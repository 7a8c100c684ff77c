// SDK for federation: the controller's routes (tokens, directory, vouch,
// place, break-glass reports) and an office's own (vouch redemption, local
// authority, identity writes, placed projects). Every type is the route's own
// (src/wire/federation.ts).
import type { InferInput } from 'valibot'
import type { Transport } from './http.ts'
import type { DeployBody as OfficeProjectSpec } from '../wire/projects.ts'
import type {
  MintOfficeToken,
  OfficeBreakGlassReport,
  OfficeIdentityWrite,
  OfficeInfo,
  OfficeLocalAuthority,
  OfficePlaced,
  OfficeTokenInfo,
  OfficeTokenMinted,
  OfficeTokenRevoked,
  PlacedProjectsPage,
  VouchMinted,
  VouchRedeemed,
} from '../wire/federation.ts'

export type { DeployBody as OfficeProjectSpec } from '../wire/projects.ts'
export type {
  OfficeBreakGlassReport,
  OfficeIdentityWrite,
  OfficeInfo,
  OfficeLocalAuthority,
  OfficeProjectStatus,
  OfficeStatus,
  OfficeTokenInfo,
  PlacedProjectsPage,
} from '../wire/federation.ts'

const office = (id: string) => `/api/v1/federation/offices/${encodeURIComponent(id)}`

export function federationApi(call: Transport) {
  return {
    mint: (body: InferInput<typeof MintOfficeToken>) => call<OfficeTokenMinted>('POST', '/api/v1/federation/join-tokens', body),
    tokens: () => call<{ tokens: OfficeTokenInfo[] }>('GET', '/api/v1/federation/join-tokens'),
    revoke: (officeId: string) => call<OfficeTokenRevoked>('POST', `/api/v1/federation/join-tokens/${encodeURIComponent(officeId)}/revoke`),
    offices: () => call<{ offices: OfficeInfo[] }>('GET', '/api/v1/federation/offices'),
    vouch: (officeId: string) => call<VouchMinted>('POST', `${office(officeId)}/vouch`),
    place: (officeId: string, spec: OfficeProjectSpec) => call<OfficePlaced>('POST', `${office(officeId)}/projects`, spec),
    breakGlassReports: () => call<{ reports: OfficeBreakGlassReport[] }>('GET', '/api/v1/federation/break-glass'),
    /** On an office: trade a vouch for a session (the cookie comes back in Set-Cookie). */
    redeemVouch: (vouch: string) => call<VouchRedeemed>('POST', '/api/office/vouch', { vouch }),
    localAuthority: () => call<OfficeLocalAuthority>('GET', '/api/v1/office/local-authority'),
    identityWrites: () => call<{ writes: OfficeIdentityWrite[] }>('GET', '/api/v1/office/identity-writes'),
    placedProjects: () => call<PlacedProjectsPage>('GET', '/api/v1/office/projects'),
  }
}
