// Every provider client against its local fake: credentials proved by a list
// call (and refused the way the real API refuses them), regions, sizes, a
// machine created with its first-boot data, idempotent on the request id,
// pending → running, deleted.
import { describe, expect, test } from 'bun:test'
import type { CloudProvider } from '../../src/cloud/provider.ts'
import { HetznerProvider } from '../../src/cloud/providers/hetzner.ts'
import { DigitalOceanProvider } from '../../src/cloud/providers/digitalocean.ts'
import type { FakeServer } from '../fakes/common.ts'
import { startHetznerFake } from '../fakes/hetzner.ts'
import { startDigitalOceanFake } from '../fakes/digitalocean.ts'
import { AwsProvider } from '../../src/cloud/providers/aws.ts'
import { startAwsFake, type AwsFake } from '../fakes/aws.ts'
import { AzureProvider } from '../../src/cloud/providers/azure.ts'
import { startAzureFake, type AzureFake } from '../fakes/azure.ts'
import { GcpProvider } from '../../src/cloud/providers/gcp.ts'
import { startGcpFake, type GcpFake } from '../fakes/gcp.ts'
import { parseCredentials, type GcpCredentials } from '../../src/cloud/provider.ts'
import { waitFor } from '../helpers/tmp.ts'
import { CLOSED } from '../../src/cloud/provider.ts'
import { ctx, hz } from './_ctx.ts'

interface Case {
  name: string
  start(): Promise<FakeServer> | FakeServer
  good(f: FakeServer): CloudProvider | Promise<CloudProvider>
  bad(f: FakeServer): CloudProvider | Promise<CloudProvider>
  secret(f: FakeServer): string
  region: string
  size: string
  sizesRegion?: string
}

export const CASES: Case[] = [
  {
    name: 'hetzner',
    start: () => startHetznerFake(),
    good: (f) => new HetznerProvider({ token: (f as ReturnType<typeof startHetznerFake>).token }, hz(f.url)),
    bad: (f) => new HetznerProvider({ token: 'not-the-token' }, hz(f.url)),
    secret: (f) => (f as ReturnType<typeof startHetznerFake>).token,
    region: 'fsn1',
    size: 'cx22',
  },
  {
    name: 'digitalocean',
    start: () => startDigitalOceanFake(),
    good: (f) => new DigitalOceanProvider({ token: (f as ReturnType<typeof startDigitalOceanFake>).token }, hz(f.url)),
    bad: (f) => new DigitalOceanProvider({ token: 'dop_v1_wrong' }, hz(f.url)),
    secret: (f) => (f as ReturnType<typeof startDigitalOceanFake>).token,
    region: 'nyc3',
    size: 's-1vcpu-1gb',
  },
  {
    name: 'aws',
    start: () => startAwsFake(),
    good: (f) => new AwsProvider({ accessKeyId: (f as AwsFake).accessKeyId, secretAccessKey: (f as AwsFake).secretAccessKey, region: 'eu-central-1' }, ctx({ aws: f.url })),
    bad: (f) => new AwsProvider({ accessKeyId: (f as AwsFake).accessKeyId, secretAccessKey: 'wrong-secret-access-key-0123456789abcdefgh', region: 'eu-central-1' }, ctx({ aws: f.url })),
    secret: (f) => (f as AwsFake).secretAccessKey,
    region: 'eu-central-1',
    size: 't3.micro',
  },
  {
    name: 'azure',
    start: () => startAzureFake(),
    good: (f) => new AzureProvider(azureCreds(f as AzureFake), { ...hz(f.url), arm: f.url, login: f.url }),
    bad: (f) => new AzureProvider({ ...azureCreds(f as AzureFake), clientSecret: 'wrong~secret' }, { ...hz(f.url), arm: f.url, login: f.url }),
    secret: (f) => (f as AzureFake).clientSecret,
    region: 'westeurope',
    size: 'Standard_B1s',
  },
  {
    name: 'gcp',
    start: () => startGcpFake(),
    good: (f) => new GcpProvider(parseCredentials('gcp', JSON.stringify((f as GcpFake).key)) as GcpCredentials, { ...hz(f.url), tokenUrl: (f as GcpFake).tokenUrl }),
    bad: async (f) => {
      // a key Google never issued: same account, another private key
      const other = await startGcpFake()
      await other.stop()
      return new GcpProvider({ ...(parseCredentials('gcp', (f as GcpFake).key) as GcpCredentials), private_key: other.key.private_key! }, { ...hz(f.url), tokenUrl: (f as GcpFake).tokenUrl })
    },
    secret: (f) => (f as GcpFake).key.private_key!.split('\n')[2]!,
    region: 'europe-west1-b',
    size: 'e2-small',
  },
]

function azureCreds(f: AzureFake) {
  return { tenantId: f.tenantId, clientId: f.clientId, clientSecret: f.clientSecret, subscriptionId: f.subscriptionId, resourceGroup: f.resourceGroup }
}

const USER_DATA = '#cloud-config\nwrite_files:\n  - path: /root/x\n    content: |\n      hello ünïcode\n'

for (const c of CASES) {
  describe(`${c.name} client against its fake`, () => {
    test('a list call proves the credentials; wrong ones are refused and never echoed', async () => {
      await using fake = await c.start()
      expect(await (await c.good(fake)).validate()).toHaveProperty('account')
      const refused = await (await c.bad(fake)).validate().catch((e: Error) => e)
      expect(refused).toMatchObject({ code: 'cloud-credentials-refused' })
      expect((refused as Error).message).toContain(c.name)
      expect(JSON.stringify(refused)).not.toContain(c.secret(fake))
    })

    test('regions and sizes', async () => {
      await using fake = await c.start()
      const p = await c.good(fake)
      const regions = await p.regions()
      expect(regions.map((r) => r.id)).toContain(c.region)
      const sizes = await p.sizes(c.sizesRegion ?? c.region)
      const size = sizes.find((s) => s.id === c.size)
      expect(size).toBeDefined()
      expect(size!.cpus).toBeGreaterThan(0)
      expect(size!.memoryMB).toBeGreaterThan(0)
    })

    test('create with first-boot data, idempotent on the request id; pending → running; delete', async () => {
      await using fake = await c.start()
      fake.book.bootMs = 300
      const p = await c.good(fake)
      const req = { name: 'cloud-w1', region: c.region, size: c.size, userData: USER_DATA, requestId: 'prv-abcdefghijkl', role: 'general' as const, inbound: CLOSED }
      expect(await p.findMachine(req)).toBeNull()
      const m = await p.createMachine(req)
      expect(m.status).toBe('pending')
      expect(fake.book.created).toHaveLength(1)
      expect(fake.book.created[0]!.userData).toBe(USER_DATA)
      expect((await p.findMachine(req))?.id).toBe(m.id)
      const again = await p.createMachine(req)
      expect(again.id).toBe(m.id)
      expect(fake.book.created).toHaveLength(1)
      const running = await waitFor(async () => {
        const x = await p.getMachine(m.id)
        return x?.status === 'running' ? x : null
      }, { what: 'running' })
      expect(running.address).toMatch(/^\d+\.\d+\.\d+\.\d+$/)
      await p.deleteMachine(m.id)
      // gone, or (EC2: terminated instances stay listed for a while) shown as failed
      const after = await p.getMachine(m.id)
      if (after !== null) expect(after.status).toBe('failed')
      await p.deleteMachine(m.id) // already gone is fine
      expect(fake.book.deleted).toEqual([fake.book.created[0]!.id])
    })

    test('a refusal of the create is the provider’s error, not a credentials error', async () => {
      await using fake = await c.start()
      const p = await c.good(fake)
      const e = await p.createMachine({ name: 'cloud-w2', region: c.region, size: 'no-such-size', userData: USER_DATA, requestId: 'prv-bcdefghijklm', role: 'general', inbound: CLOSED }).catch((x: unknown) => x)
      expect(e).toMatchObject({ code: 'cloud-provider-error' })
      expect(fake.book.created).toHaveLength(0)
    })
  })
}
