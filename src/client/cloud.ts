// SDK: cloud providers, the machines this Platform creates, and scale-out.
// Every type is the route's own (src/wire/cloud.ts).
import type { Transport } from './http.ts'
import type { CloudAudit, CloudConnection, CloudDisconnected, CloudScaling, CloudStatus, ProvisionBody, ProvisionView, RegionList, ScalingBody, SizeList } from '../wire/cloud.ts'

export type {
  CloudAudit,
  CloudConnection,
  CloudScaling,
  CloudStatus,
  ProviderName as CloudProviderName,
  ProvisionBody,
  ProvisionView as CloudProvision,
  Region as CloudRegion,
  ScalingBody,
  Size as CloudSize,
} from '../wire/cloud.ts'

export function cloudApi(call: Transport) {
  const enc = encodeURIComponent
  return {
    status: () => call<CloudStatus>('GET', '/api/v1/cloud/status'),
    /** Credentials: a token string (Hetzner, DigitalOcean) or the provider's JSON object. Never returned. */
    connect: (provider: string, credentials: string | Record<string, unknown>) => call<CloudConnection>('POST', '/api/v1/cloud/connections', { provider, credentials }),
    disconnect: (provider: string) => call<CloudDisconnected>('DELETE', `/api/v1/cloud/connections/${enc(provider)}`),
    regions: (provider: string) => call<RegionList>('GET', `/api/v1/cloud/providers/${enc(provider)}/regions`),
    sizes: (provider: string, region?: string) => call<SizeList>('GET', `/api/v1/cloud/providers/${enc(provider)}/sizes${region ? `?region=${enc(region)}` : ''}`),
    provision: (body: ProvisionBody) => call<ProvisionView>('POST', '/api/v1/cloud/provisions', body),
    provisions: () => call<{ provisions: ProvisionView[] }>('GET', '/api/v1/cloud/provisions'),
    provisionInfo: (id: string) => call<ProvisionView>('GET', `/api/v1/cloud/provisions/${enc(id)}`),
    release: (id: string) => call<ProvisionView>('DELETE', `/api/v1/cloud/provisions/${enc(id)}`),
    scaling: () => call<CloudScaling>('GET', '/api/v1/cloud/scaling'),
    setScaling: (body: ScalingBody) => call<CloudScaling>('PUT', '/api/v1/cloud/scaling', body),
    /** Every cloud action with its principal, newest first. */
    audit: () => call<CloudAudit>('GET', '/api/v1/cloud/audit'),
  }
}
