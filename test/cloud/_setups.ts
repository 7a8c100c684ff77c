// Each provider's fake wired into a Platform's endpoints, with the
// credentials to connect, a region and size it offers, where a create request
// carries the first-boot data, and how its API treats a repeated create.
import type { cloudOf } from '../../src/cloud/service.ts'
import type { FakeServer } from '../fakes/common.ts'
import { startAwsFake } from '../fakes/aws.ts'
import { startAzureFake } from '../fakes/azure.ts'
import { startDigitalOceanFake } from '../fakes/digitalocean.ts'
import { startGcpFake } from '../fakes/gcp.ts'
import { startHetznerFake } from '../fakes/hetzner.ts'
import type { ProviderName } from '../../src/wire/cloud.ts'

export interface Setup {
  fake: FakeServer
  credentials: string | Record<string, unknown>
  region: string
  size: string
  /** The first-boot data a create request carried, as the machine would read it. */
  userData(body: string): string
  /** Whether reads lag behind creates at this provider (documented for EC2 and Compute Engine). */
  lags: boolean
  /** Whether the create itself is safe to send again (EC2 ClientToken, GCP requestId, ARM PUT), so a lost answer is resent at once. */
  idempotent: boolean
}

export const b64 = (s: string) => Buffer.from(s, 'base64').toString('utf8')
/** EC2 user data: base64 of the gzipped cloud-config, as the machine reads it. */
export const awsUserData = (s: string) => {
  const raw = Buffer.from(s, 'base64')
  return raw[0] === 0x1f && raw[1] === 0x8b ? new TextDecoder().decode(Bun.gunzipSync(raw)) : raw.toString('utf8')
}

export const SETUPS: Record<ProviderName, (e: ReturnType<typeof cloudOf>['endpoints']) => Promise<Setup>> = {
  async hetzner(e) {
    const fake = startHetznerFake()
    e.hetzner = fake.url
    return { fake, credentials: fake.token, region: 'fsn1', size: 'cx22', userData: (b) => JSON.parse(b).user_data, lags: true, idempotent: false }
  },
  async digitalocean(e) {
    const fake = startDigitalOceanFake()
    e.digitalocean = fake.url
    return { fake, credentials: fake.token, region: 'ams3', size: 's-2vcpu-2gb', userData: (b) => JSON.parse(b).user_data, lags: false, idempotent: false }
  },
  async aws(e) {
    const fake = startAwsFake()
    e.aws = fake.url
    return { fake, credentials: JSON.stringify({ access_key_id: fake.accessKeyId, secret_access_key: fake.secretAccessKey, region: 'eu-central-1' }), region: 'eu-central-1', size: 't3.small', userData: (b) => awsUserData(new URLSearchParams(b).get('UserData')!), lags: true, idempotent: true }
  },
  async azure(e) {
    const fake = startAzureFake()
    e.azure = fake.url
    e.azureLogin = fake.url
    const credentials = { tenant_id: fake.tenantId, client_id: fake.clientId, client_secret: fake.clientSecret, subscription_id: fake.subscriptionId, resource_group: fake.resourceGroup }
    return { fake, credentials, region: 'westeurope', size: 'Standard_B2s', userData: (b) => b64(JSON.parse(b).properties.osProfile.customData), lags: false, idempotent: true }
  },
  async gcp(e) {
    const fake = await startGcpFake()
    e.gcp = fake.url
    e.gcpToken = fake.tokenUrl
    return { fake, credentials: JSON.stringify(fake.key), region: 'europe-west1-b', size: 'e2-medium', userData: (b) => JSON.parse(b).metadata.items[0].value, lags: true, idempotent: true }
  },
}
