// Closed means closed at every provider, and each provider as its API really
// behaves: Hetzner and DigitalOcean machines have a firewall with no inbound
// rule from their create on, and a firewall found by name is read and put
// back; GCP's muster-deny-inbound is repaired when disabled or edited and its
// Operations are polled; boot disks the newest GCP families take; Hetzner
// types deprecated as a whole; Azure provisions that run at once, subnets
// others added, the waits Azure asks for in milliseconds, lists across pages,
// and what a VM delete leaves behind; credential forms. And the first-boot
// token of a machine released while it boots is dead.
import { describe, expect, test } from 'bun:test'
import { CLOSED, parseCredentials, type GcpCredentials } from '../../src/cloud/provider.ts'
import { AzureProvider } from '../../src/cloud/providers/azure.ts'
import { DigitalOceanProvider } from '../../src/cloud/providers/digitalocean.ts'
import { GcpProvider } from '../../src/cloud/providers/gcp.ts'
import { HetznerProvider } from '../../src/cloud/providers/hetzner.ts'
import { cloudOf } from '../../src/cloud/service.ts'
import { VERSION } from '../../src/version.ts'
import { startAzureFake, type AzureFake } from '../fakes/azure.ts'
import { startDigitalOceanFake } from '../fakes/digitalocean.ts'
import { readFirstBoot } from '../fakes/first-boot.ts'
import { startGcpFake, type GcpFake } from '../fakes/gcp.ts'
import { startHetznerFake } from '../fakes/hetzner.ts'
import { enrollRaw, newCert } from '../helpers/certs.ts'
import { startListenerPlatform } from '../helpers/node-side.ts'
import { hz } from './_ctx.ts'
import { SETUPS } from './_setups.ts'

const req = (name: string, requestId: string, region: string, size: string) => ({ name, requestId, region, size, userData: '#cloud-config\n', role: 'general' as const, inbound: CLOSED })
const azCreds = (f: AzureFake) => ({ tenantId: f.tenantId, clientId: f.clientId, clientSecret: f.clientSecret, subscriptionId: f.subscriptionId, resourceGroup: f.resourceGroup })
const azure = (f: AzureFake) => new AzureProvider(azCreds(f), { ...hz(f.url), arm: f.url, login: f.url })
const gcp = (f: GcpFake, arch: 'x86_64' | 'arm64' = 'x86_64') => new GcpProvider(parseCredentials('gcp', f.key) as GcpCredentials, { ...hz(f.url, arch), tokenUrl: f.tokenUrl })

describe('the first-boot token', () => {
  for (const provider of ['aws', 'hetzner'] as const) {
    test(`${provider}: released while its machine boots, the token in its user data enrolls nothing`, async () => {
      await using p = await startListenerPlatform()
      const cloud = cloudOf(p.platform)
      cloud.binary = { url: 'https://releases.example/muster', sha256: 'ef'.repeat(32) }
      const s = await SETUPS[provider](cloud.endpoints)
      await using _fake = s.fake
      s.fake.book.bootMs = 60_000 // still booting
      await p.client.cloud.connect(provider, s.credentials)
      const prv = await p.client.cloud.provision({ provider, name: `${provider}-gone`, region: s.region, size: s.size })
      expect(prv.state).toBe('booting')
      const token = readFirstBoot(s.fake.book.created[0]!.userData).token
      expect((await p.client.cloud.release(prv.id)).state).toBe('released')
      if (token === undefined) {
        // AWS, GCP, Azure: no token to steal; the machine the Platform expected is expected no more
        expect(await p.platform.store.get('SELECT revoked_at IS NOT NULL AS revoked FROM cloud_expected_machines WHERE node_name = ?1', `${provider}-gone`)).toEqual({ revoked: 1 })
        return
      }
      // the attack: whoever read the user data (a snapshot, the console, the machine's last breath) enrolls with it, from its server
      const r = await enrollRaw(p.url, { token, machineId: s.fake.book.created[0]!.id, nodeId: `${provider}-gone`, certPem: (await newCert(`${provider}-gone`)).certPem, version: VERSION })
      expect(r.status).toBe(403)
      expect(((await r.json()) as { error: { code: string } }).error.code).toBe('enrollment-refused')
      expect((await p.client.nodes.list()).nodes.map((n) => n.name)).not.toContain(`${provider}-gone`)
    })
  }
})

describe('hetzner and digitalocean: a firewall with no inbound rule from the create on, read and repaired', () => {
  test('hetzner: muster-closed has no rule, is on the server from its create, and is set back when someone opens it', async () => {
    await using f = startHetznerFake()
    const p = new HetznerProvider({ token: f.token }, hz(f.url))
    await p.createMachine(req('hz-c1', 'prv-hzclosed0001', 'fsn1', 'cx22'))
    expect(f.firewalls).toEqual([{ id: expect.any(Number), name: 'muster-closed', labels: { 'managed-by': 'muster' }, rules: [] }])
    expect(f.book.created[0]!.extra.firewalls).toEqual([f.firewalls[0]!.id])
    f.firewalls[0]!.rules = [{ direction: 'in', protocol: 'tcp', port: '22', source_ips: ['0.0.0.0/0', '::/0'] }]
    await p.createMachine(req('hz-c2', 'prv-hzclosed0002', 'fsn1', 'cx22'))
    expect(f.firewalls).toHaveLength(1)
    expect(f.firewalls[0]!.rules).toEqual([])
    expect(f.calls).toContain(`POST /v1/firewalls/${f.firewalls[0]!.id}/actions/set_rules`)
  })

  test('hetzner: a type deprecated as a whole is not offered, whatever its locations say', async () => {
    await using f = startHetznerFake()
    const sizes = (await new HetznerProvider({ token: f.token }, hz(f.url)).sizes('fsn1')).map((s) => s.id)
    expect(sizes).toEqual(['cx22', 'cx32'])
  })

  test('digitalocean: the droplet carries muster-closed’s tag from its create; a widened firewall is put back', async () => {
    await using f = startDigitalOceanFake()
    const p = new DigitalOceanProvider({ token: f.token }, hz(f.url))
    await p.createMachine(req('do-c1', 'prv-doclosed0001', 'ams3', 's-1vcpu-1gb'))
    const fw = f.firewalls.find((x) => x.name === 'muster-closed')!
    expect(fw).toMatchObject({ inbound_rules: [], tags: ['muster-closed'] })
    expect(fw.outbound_rules).toHaveLength(3)
    expect(Object.keys(f.book.created[0]!.labels)).toContain('muster-closed')
    fw.inbound_rules = [{ protocol: 'tcp', ports: '22', sources: { addresses: ['0.0.0.0/0'] } }]
    fw.tags = []
    await p.createMachine(req('do-c2', 'prv-doclosed0002', 'ams3', 's-1vcpu-1gb'))
    expect(f.firewalls).toHaveLength(1)
    expect(fw).toMatchObject({ inbound_rules: [], tags: ['muster-closed'] })
    expect(f.calls).toContain(`PUT /v2/firewalls/${fw.id}`)
  })
})

describe('gcp', () => {
  test('muster-deny-inbound disabled, or edited, is repaired before the next machine; inserts and updates are polled to DONE', async () => {
    await using f = await startGcpFake()
    f.opMs = 80
    const p = gcp(f)
    await p.createMachine(req('gcp-c1', 'prv-gcpclosed001', 'europe-west1-b', 'e2-medium'))
    const deny = () => f.firewalls.find((x) => x.name === 'muster-deny-inbound')!
    expect(deny()).toMatchObject({ disabled: false, priority: 1000, denied: [{ IPProtocol: 'all' }], sourceRanges: ['0.0.0.0/0'], targetTags: ['muster'] })
    const polls = () => f.calls.filter((c) => c.includes('/global/operations/')).length
    expect(polls()).toBeGreaterThan(0)
    // disabled in the console: the next create puts it back
    deny().disabled = true
    await p.createMachine(req('gcp-c2', 'prv-gcpclosed002', 'europe-west1-b', 'e2-medium'))
    expect(deny().disabled).toBe(false)
    // edited: narrowed to one source and moved below default-allow-ssh (65534 wins over nothing then)
    Object.assign(deny(), { sourceRanges: ['10.0.0.0/8'], priority: 65535 })
    await p.createMachine(req('gcp-c3', 'prv-gcpclosed003', 'europe-west1-b', 'e2-medium'))
    expect(deny()).toMatchObject({ sourceRanges: ['0.0.0.0/0'], priority: 1000, disabled: false })
    expect(f.calls.filter((c) => c === 'PUT /compute/v1/projects/muster-test-4711/global/firewalls/muster-deny-inbound')).toHaveLength(2)
    // the default network's default-allow-ssh (priority 65534) is left alone: 1000 wins over it for muster's machines
    expect(deny().priority).toBeLessThan(65534)
  })

  test('a firewall write whose Operation fails stops the create (nothing is created unguarded)', async () => {
    await using f = await startGcpFake()
    f.failNextFirewall = { code: 'PERMISSION_DENIED', message: "Required 'compute.firewalls.create' permission for 'projects/muster-test-4711/global/firewalls/muster-deny-inbound'" }
    await expect(gcp(f).createMachine(req('gcp-f1', 'prv-gcpfailfw001', 'europe-west1-b', 'e2-medium'))).rejects.toMatchObject({ code: 'cloud-refused', message: expect.stringContaining('compute.firewalls.create') })
    expect(f.book.created).toHaveLength(0)
  })

  test('boot disks: C3 gets pd-balanced, N4 and C4A hyperdisk-balanced (the default pd-standard is refused by them); unknown families are not offered', async () => {
    await using f = await startGcpFake()
    await gcp(f).createMachine(req('gcp-c3', 'prv-gcpdiskc3001', 'europe-west1-b', 'c3-standard-4'))
    await gcp(f).createMachine(req('gcp-n4', 'prv-gcpdiskn4001', 'europe-west1-b', 'n4-standard-2'))
    await gcp(f, 'arm64').createMachine(req('gcp-c4a', 'prv-gcpdiskc4a01', 'europe-west1-b', 'c4a-standard-1'))
    expect(f.book.created.map((m) => [m.size, m.extra.diskType])).toEqual([
      ['c3-standard-4', 'pd-balanced'],
      ['n4-standard-2', 'hyperdisk-balanced'],
      ['c4a-standard-1', 'hyperdisk-balanced'],
    ])
    expect((await gcp(f).sizes('europe-west1-b')).map((s) => s.id)).not.toContain('ct5lp-hightpu-1t')
  })
})

describe('azure', () => {
  test('409 AnotherOperationInProgress (another provision on the same VNet/NSG) is waited out and sent again', async () => {
    await using f = startAzureFake()
    f.conflictNext = 3
    const m = await azure(f).createMachine(req('az-busy', 'prv-azbusybusy01', 'westeurope', 'Standard_B1s'))
    expect(m.id).toBe('az-busy')
    expect(f.conflicts).toBe(3)
  })

  test('two provisions at once in one region both succeed, with one VNet and one subnet', async () => {
    await using f = startAzureFake()
    f.busyMs = 40
    const [a, b] = await Promise.all([azure(f).createMachine(req('az-one', 'prv-azoneazone01', 'westeurope', 'Standard_B1s')), azure(f).createMachine(req('az-two', 'prv-aztwoaztwo01', 'westeurope', 'Standard_B1s'))])
    expect([a.id, b.id].sort()).toEqual(['az-one', 'az-two'])
    const vnets = [...f.resources.values()].filter((r) => r.type === 'virtualNetworks')
    expect(vnets).toHaveLength(1)
    expect((vnets[0]!.body.properties!.subnets as { name: string }[]).map((s) => s.name)).toEqual(['muster'])
  })

  test('a subnet someone else added to muster’s VNet stays: the VNet is not PUT again, muster’s subnet is its own resource', async () => {
    await using f = startAzureFake()
    const az = azure(f)
    await az.createMachine(req('az-s1', 'prv-azsubnet0001', 'westeurope', 'Standard_B1s'))
    const vnetId = [...f.resources.entries()].find(([, r]) => r.type === 'virtualNetworks')![0]
    const vnet = f.resources.get(vnetId)!
    ;(vnet.body.properties!.subnets as unknown[]).push({ id: `${vnetId}/subnets/theirs`, name: 'theirs', properties: { addressPrefix: '10.73.64.0/20' } })
    await az.createMachine(req('az-s2', 'prv-azsubnet0002', 'westeurope', 'Standard_B1s'))
    expect((vnet.body.properties!.subnets as { name: string }[]).map((s) => s.name).sort()).toEqual(['muster', 'theirs'])
    expect(f.calls.filter((c) => c.endsWith('/virtualNetworks/muster-vnet-westeurope') && c.startsWith('PUT'))).toHaveLength(1)
  })

  test('a widened NSG is put back on the next create', async () => {
    await using f = startAzureFake()
    const az = azure(f)
    await az.createMachine(req('az-n1', 'prv-aznsg000001', 'westeurope', 'Standard_B1s'))
    const nsg = [...f.resources.values()].find((r) => r.type === 'networkSecurityGroups')!
    ;(nsg.body.properties!.securityRules as unknown[]).unshift({ name: 'ssh-anywhere', properties: { priority: 100, direction: 'Inbound', access: 'Allow', protocol: 'Tcp', sourceAddressPrefix: '*', sourcePortRange: '*', destinationAddressPrefix: '*', destinationPortRange: '22' } })
    await az.createMachine(req('az-n2', 'prv-aznsg000002', 'westeurope', 'Standard_B1s'))
    const now = [...f.resources.values()].find((r) => r.type === 'networkSecurityGroups')!
    expect((now.body.properties!.securityRules as { name: string }[]).map((r) => r.name)).toEqual(['deny-all-inbound'])
  })

  for (const style of ['retry-after-ms', 'x-ms-retry-after-ms', 'retryable-error'] as const) {
    test(`throttled with ${style}: the wait Azure asks for is honoured`, async () => {
      await using f = startAzureFake()
      f.throttleStyle = style
      f.throttle(1, (_r, u) => u.pathname.endsWith('/locations'), 1)
      const started = Date.now()
      expect((await azure(f).regions()).map((r) => r.id)).toEqual(['westeurope', 'eastus'])
      expect(Date.now() - started).toBeGreaterThanOrEqual(1000)
      expect(f.throttled).toHaveLength(1)
    })
  }

  test('every list follows nextLink: regions and sizes across pages', async () => {
    await using f = startAzureFake()
    f.pageSize = 1
    expect((await azure(f).regions()).map((r) => r.id)).toEqual(['westeurope', 'eastus'])
    expect((await azure(f).sizes('westeurope')).map((s) => s.id)).toEqual(['Standard_B1s', 'Standard_B2s', 'Standard_D2s_v5'])
  })

  test('a VM delete is waited for; a NIC and public IP still there afterwards are deleted by name (the NIC first)', async () => {
    await using f = startAzureFake()
    const az = azure(f)
    await az.createMachine(req('az-d1', 'prv-azdelete0001', 'westeurope', 'Standard_B1s'))
    f.leaveBehind = true
    await az.deleteMachine('az-d1')
    expect(f.book.machines.size).toBe(0)
    expect([...f.resources.values()].map((r) => r.type).sort()).toEqual(['networkSecurityGroups', 'virtualNetworks'])
    const deletes = f.calls.filter((c) => c.startsWith('DELETE'))
    expect(deletes.map((c) => c.split('/').slice(-2).join('/'))).toEqual(['virtualMachines/az-d1', 'networkInterfaces/az-d1-nic', 'publicIPAddresses/az-d1-ip'])
  })
})

describe('credential forms', () => {
  test('azure: client_secret wins over federated_token_file when both are given', () => {
    const both = { tenant_id: 't', client_id: 'c', client_secret: 's3cret', federated_token_file: '/var/run/secrets/azure/tokens/token', subscription_id: '00000000-1111-2222-3333-444444444444', resource_group: 'rg' }
    const c = parseCredentials('azure', JSON.stringify(both))
    expect(c).toMatchObject({ clientSecret: 's3cret' })
    expect(c).not.toHaveProperty('federatedTokenFile')
  })

  test('gcp: an external_account (workload identity federation) file is refused, saying what to give instead', () => {
    const external = { type: 'external_account', audience: '//iam.googleapis.com/projects/1/locations/global/workloadIdentityPools/p/providers/x', subject_token_type: 'urn:ietf:params:oauth:token-type:jwt', token_url: 'https://sts.googleapis.com/v1/token', credential_source: { file: '/var/run/token' } }
    expect(() => parseCredentials('gcp', JSON.stringify(external))).toThrow(expect.objectContaining({ code: 'invalid-request', message: expect.stringContaining('Give a service account key file (type service_account) instead') }))
  })
})
