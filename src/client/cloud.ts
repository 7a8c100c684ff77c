// SDK: cloud providers, the machines this Platform creates, and scale-out.
import type { InferInput } from 'valibot'
import type { Transport } from './http.ts'
import type { Region, Size } from '../cloud/provider.ts'
import type { ProvisionView } from '../cloud/provisioner.ts'
import type { Cloud } from '../cloud/service.ts'
import type { Autoscaler } from '../cloud/autoscale.ts'
import type { Provision, Scaling } from '../http/routes/cloud.ts'

export type { Region as CloudRegion, Size as CloudSize, ProviderName as CloudProviderName } from '../cloud/provider.ts'
export type { ProvisionView as CloudProvision } from '../cloud/provisioner.ts'
export type CloudStatus = ReturnType<Cloud['status']>
export type CloudConnection = ReturnType<Cloud['connectionView']>
export type CloudScaling = ReturnType<Autoscaler['view']>
export type CloudAudit = ReturnType<Cloud['audit']>
export type ProvisionBody = InferInput<typeof Provision>
export type ScalingBody = InferInput<typeof Scaling>

export function cloudApi(call: Transport) {
  const enc = encodeURIComponent
  return {
    status: () => call<CloudStatus>('GET', '/api/v1/cloud/status'),
    /** Credentials: a token string (Hetzner, DigitalOcean) or the provider's JSON object. Never returned. */
    connect: (provider: string, credentials: string | Record<string, unknown>) => call<CloudConnection>('POST', '/api/v1/cloud/connections', { provider, credentials }),
    disconnect: (provider: string) => call<{ provider: string; connected: false }>('DELETE', `/api/v1/cloud/connections/${enc(provider)}`),
    regions: (provider: string) => call<{ provider: string; regions: Region[] }>('GET', `/api/v1/cloud/providers/${enc(provider)}/regions`),
    sizes: (provider: string, region?: string) =>
      call<{ provider: string; region: string | null; sizes: Size[] }>('GET', `/api/v1/cloud/providers/${enc(provider)}/sizes${region ? `?region=${enc(region)}` : ''}`),
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
