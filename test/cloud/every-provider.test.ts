// Each of the five providers through the Platform: connected over the API with
// its own credential shape, a provision whose first-boot data arrives intact
// within that API's limit, the machine enrolls and is ready, release deletes it.
import { describe, expect, test } from 'bun:test'
import type { ProviderName } from '../../src/cloud/provider.ts'
import { cloudOf } from '../../src/cloud/service.ts'
import { createClient } from '../../src/client/index.ts'
import { VERSION } from '../../src/version.ts'
import type { FakeServer } from '../fakes/common.ts'
import { startAwsFake } from '../fakes/aws.ts'
import { startAzureFake } from '../fakes/azure.ts'
import { startDigitalOceanFake } from '../fakes/digitalocean.ts'
import { readFirstBoot } from '../fakes/first-boot.ts'
import { startGcpFake } from '../fakes/gcp.ts'
import { startHetznerFake } from '../fakes/hetzner.ts'
import { enrollRaw, newCert } from '../helpers/certs.ts'
import { startListenerPlatform } from '../helpers/node-side.ts'
import { waitFor } from '../helpers/tmp.ts'

interface Setup {
  fake: FakeServer
  credentials: string | Record<string, unknown>
  region: string
  size: string
}

const SETUPS: Record<ProviderName, (e: ReturnType<typeof cloudOf>['endpoints']) => Promise<Setup>> = {
  async hetzner(e) {
    const fake = startHetznerFake()
    e.hetzner = fake.url
    return { fake, credentials: fake.token, region: 'fsn1', size: 'cx22' }
  },
  async digitalocean(e) {
    const fake = startDigitalOceanFake()
    e.digitalocean = fake.url
    return { fake, credentials: fake.token, region: 'ams3', size: 's-2vcpu-2gb' }
  },
  async aws(e) {
    const fake = startAwsFake()
    e.aws = fake.url
    return { fake, credentials: JSON.stringify({ access_key_id: fake.accessKeyId, secret_access_key: fake.secretAccessKey, region: 'eu-central-1' }), region: 'eu-central-1', size: 't3.small' }
  },
  async azure(e) {
    const fake = startAzureFake()
    e.azure = fake.url
    e.azureLogin = fake.url
    const credentials = { tenant_id: fake.tenantId, client_id: fake.clientId, client_secret: fake.clientSecret, subscription_id: fake.subscriptionId, resource_group: fake.resourceGroup }
    return { fake, credentials, region: 'westeurope', size: 'Standard_B2s' }
  },
  async gcp(e) {
    const fake = await startGcpFake()
    e.gcp = fake.url
    e.gcpToken = fake.tokenUrl
    return { fake, credentials: JSON.stringify(fake.key), region: 'europe-west1-b', size: 'e2-medium' }
  },
}

describe('provisioning at every provider', () => {
  for (const provider of Object.keys(SETUPS) as ProviderName[]) {
    test(`${provider}: connect, provision, first-boot data intact, ready, release`, async () => {
      await using p = await startListenerPlatform()
      const cloud = cloudOf(p.platform)
      cloud.binary = { url: 'https://releases.example/muster', sha256: 'ef'.repeat(32) }
      const s = await SETUPS[provider](cloud.endpoints)
      await using _fake = s.fake
      s.fake.book.bootMs = 200
      const connected = await p.client.cloud.connect(provider, s.credentials)
      expect(connected).toMatchObject({ provider, connected: true })
      expect((await p.client.cloud.regions(provider)).regions.some((r) => r.id === s.region)).toBe(true)
      expect((await p.client.cloud.sizes(provider, s.region)).sizes.some((x) => x.id === s.size)).toBe(true)

      const prv = await p.client.cloud.provision({ provider, name: `${provider}-w1`, region: s.region, size: s.size })
      expect(prv.state).toBe('booting')
      expect(s.fake.book.created).toHaveLength(1)
      const boot = readFirstBoot(s.fake.book.created[0]!.userData)
      expect(boot.env).toMatchObject({ MUSTER_NODE_ID: `${provider}-w1`, MUSTER_PLATFORM_URL: p.enrollUrl, MUSTER_PLATFORM_FINGERPRINT: p.fingerprint })
      const secrets = typeof s.credentials === 'string' ? [s.credentials] : Object.values(s.credentials).map(String)
      for (const secret of secrets.filter((x) => x.length > 20)) expect(s.fake.book.created[0]!.userData).not.toContain(secret)

      await waitFor(async () => (await p.client.cloud.provisionInfo(prv.id)).state === 'enrolling', { what: `${provider} machine running` })
      const r = await enrollRaw(p.url, { token: boot.token, nodeId: `${provider}-w1`, certPem: (await newCert(`${provider}-w1`)).certPem, version: VERSION })
      expect(r.status).toBe(200)
      await createClient({ url: p.url, token: ((await r.json()) as { credential: string }).credential }).nodes.register({ version: VERSION })
      expect(await p.client.cloud.provisionInfo(prv.id)).toMatchObject({ state: 'ready', node: { state: 'ready' } })

      await expect(p.client.cloud.disconnect(provider)).rejects.toMatchObject({ code: 'cloud-in-use' })
      expect((await p.client.cloud.release(prv.id)).state).toBe('released')
      expect(s.fake.book.machines.size).toBe(0)
      expect(s.fake.book.deleted).toHaveLength(1)
      expect((await p.client.cloud.disconnect(provider)).connected).toBe(false)
    })
  }
})
