// Azure and GCP specifics: token exchanges refused the way each identity
// service refuses them (and retried when it is down), workload identity, the
// network each creates and what goes with a deleted VM, published
// api-versions, sizes an image can boot, throttling, Compute Engine's
// requestId and its Operation's error.
import { describe, expect, test } from 'bun:test'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { CLOSED, parseCredentials, type GcpCredentials } from '../../src/cloud/provider.ts'
import { AzureProvider } from '../../src/cloud/providers/azure.ts'
import { GcpProvider, requestUuid } from '../../src/cloud/providers/gcp.ts'
import { startAzureFake, type AzureFake } from '../fakes/azure.ts'
import { startGcpFake, type GcpFake } from '../fakes/gcp.ts'
import { tmpDir, waitFor } from '../helpers/tmp.ts'
import { hz } from './_ctx.ts'

const creds = (f: AzureFake) => ({ tenantId: f.tenantId, clientId: f.clientId, clientSecret: f.clientSecret, subscriptionId: f.subscriptionId, resourceGroup: f.resourceGroup })
const azure = (f: AzureFake, c: ConstructorParameters<typeof AzureProvider>[0] = creds(f), arch: 'x86_64' | 'arm64' = 'x86_64') => new AzureProvider(c, { ...hz(f.url, arch), arm: f.url, login: f.url })
const gcp = (f: GcpFake, key = parseCredentials('gcp', f.key) as GcpCredentials, arch: 'x86_64' | 'arm64' = 'x86_64') => new GcpProvider(key, { ...hz(f.url, arch), tokenUrl: f.tokenUrl })
const req = { region: 'westeurope', size: 'Standard_B1s', userData: '#cloud-config\n', role: 'general' as const, inbound: CLOSED }

describe('azure', () => {
  test('an unknown tenant, a wrong secret, a missing resource group are refused; nothing is created', async () => {
    await using f = startAzureFake()
    await expect(azure(f, { ...creds(f), tenantId: 'contoso.onmicrosoft.com' }).validate()).rejects.toMatchObject({ code: 'cloud-credentials-refused', message: expect.stringContaining('AADSTS90002') })
    await expect(azure(f, { ...creds(f), clientSecret: 'nope' }).validate()).rejects.toMatchObject({ code: 'cloud-credentials-refused', message: expect.stringContaining('AADSTS7000215') })
    await expect(azure(f, { ...creds(f), resourceGroup: 'other-rg' }).validate()).rejects.toMatchObject({ code: 'cloud-refused', detail: { providerCode: 'ResourceGroupNotFound' }, message: expect.stringContaining('create the resource group first') })
    await expect(azure(f).sizes()).rejects.toMatchObject({ code: 'invalid-request' })
    expect(f.book.created).toHaveLength(0)
  })

  test('a VM with its own public IP and NIC; the NIC’s group denies all inbound; everything goes with the VM (deleteOption on the IP itself)', async () => {
    await using f = startAzureFake()
    const az = azure(f)
    const m = await az.createMachine({ ...req, name: 'az-1', requestId: 'prv-azazazazazaz' })
    expect(m).toMatchObject({ id: 'az-1', status: 'pending', providerStatus: 'Creating' })
    const types = [...f.resources.values()].map((r) => r.type).sort()
    expect(types).toEqual(['networkInterfaces', 'networkSecurityGroups', 'publicIPAddresses', 'virtualNetworks'])
    const nsg = [...f.resources.entries()].find(([, r]) => r.type === 'networkSecurityGroups')!
    const rules = (nsg[1].body.properties!.securityRules as { properties: { direction: string; access: string; destinationPortRange: string; sourceAddressPrefix: string } }[]).map((r) => [r.properties.direction, r.properties.access, r.properties.destinationPortRange, r.properties.sourceAddressPrefix])
    expect(rules).toEqual([['Inbound', 'Deny', '*', '*']])
    const nic = [...f.resources.values()].find((r) => r.type === 'networkInterfaces')!
    expect(nic.body.properties!.networkSecurityGroup).toEqual({ id: nsg[0] })
    const ip = [...f.resources.values()].find((r) => r.type === 'publicIPAddresses')!
    expect(ip.body.properties).toMatchObject({ deleteOption: 'Delete', publicIPAllocationMethod: 'Static' })
    expect(ip.body.sku).toEqual({ name: 'Standard' })
    expect(f.book.created[0]!.labels).toEqual({ 'managed-by': 'muster', 'muster-request': 'prv-azazazazazaz', 'muster-role': 'general' })
    // every call used an api-version its resource type publishes (the fake refuses any other)
    expect(new Set(f.versions)).toEqual(new Set(['network 2024-05-01', 'compute 2024-07-01']))
    // the node's address is the public IP muster made
    await waitFor(async () => (await az.getMachine('az-1'))?.address === ip.body.properties!.ipAddress, { what: 'the public IP on the machine' })
    // a VM of that name made for another request is left alone
    await expect(az.createMachine({ ...req, name: 'az-1', requestId: 'prv-otherotherot' })).rejects.toMatchObject({ code: 'cloud-provider-error', detail: { providerStatus: 409 } })
    expect(await az.findMachine({ requestId: 'prv-otherotherot', name: 'az-1', region: 'westeurope' })).toBeNull()
    await az.deleteMachine('az-1')
    expect([...f.resources.values()].map((r) => r.type).sort()).toEqual(['networkSecurityGroups', 'virtualNetworks'])
    expect(await az.getMachine('az-1')).toBeNull()
  })

  test('--probe: the Agent port from the Platform only; the public IP is made before the machine and is its address', async () => {
    await using f = startAzureFake()
    const az = azure(f)
    const address = await az.reserveAddress({ requestId: 'prv-probeprobepr', name: 'az-p', region: 'westeurope' })
    expect(address).toMatch(/^198\.51\.100\.\d+$/)
    await az.createMachine({ ...req, name: 'az-p', requestId: 'prv-probeprobepr', inbound: { agentFrom: '203.0.113.9/32', sshFrom: null } })
    const nsg = [...f.resources.values()].find((r) => r.type === 'networkSecurityGroups')!
    const rules = (nsg.body.properties!.securityRules as { properties: { access: string; destinationPortRange: string; sourceAddressPrefix: string } }[]).map((r) => [r.properties.access, r.properties.destinationPortRange, r.properties.sourceAddressPrefix])
    expect(rules).toEqual([['Allow', '7381', '203.0.113.9/32'], ['Deny', '*', '*']])
    const ip = [...f.resources.values()].find((r) => r.type === 'publicIPAddresses')!
    expect(ip.body.properties!.ipAddress).toBe(address)
  })

  test('sizes: only what the `server` image boots (Gen2, the binary’s architecture) and this subscription may use', async () => {
    await using f = startAzureFake()
    expect((await azure(f).sizes('westeurope')).map((s) => s.id)).toEqual(['Standard_B1s', 'Standard_B2s', 'Standard_D2s_v5'])
    expect((await azure(f, creds(f), 'arm64').sizes('westeurope')).map((s) => s.id)).toEqual(['Standard_D2ps_v5'])
    expect((await azure(f).sizes('westeurope'))[1]).toEqual({ id: 'Standard_B2s', cpus: 2, memoryMB: 4096, diskGB: 1023, priceMonthly: null, currency: null })
    expect(new Set(f.versions.filter((v) => v.startsWith('skus')))).toEqual(new Set(['skus 2021-07-01']))
  })

  test('throttling: ARM’s 429 Retry-After is waited out, and a token endpoint that answers 503 is asked again', async () => {
    await using f = startAzureFake()
    f.tokenFailures = 2
    f.throttle(1, (_r, u) => u.pathname.endsWith('/skus'), 1)
    const started = Date.now()
    expect((await azure(f).sizes('westeurope')).length).toBe(3)
    expect(Date.now() - started).toBeGreaterThanOrEqual(1000)
    expect(f.throttled).toHaveLength(1)
    expect(f.calls.filter((c) => c.endsWith('/oauth2/v2.0/token'))).toHaveLength(3)
  })

  test('workload identity: the federated token file is the client assertion, read again each time; another token is refused', async () => {
    await using f = startAzureFake()
    using dir = tmpDir('muster-azure-wi-')
    const file = join(dir.path, 'azure-identity-token')
    writeFileSync(file, `${f.federatedToken}\n`)
    const { clientSecret: _, ...rest } = creds(f)
    expect(await azure(f, { ...rest, federatedTokenFile: file }).validate()).toEqual({ account: `${f.subscriptionId}/${f.resourceGroup}` })
    writeFileSync(file, 'a-token-of-another-workload')
    await expect(azure(f, { ...rest, federatedTokenFile: file }).validate()).rejects.toMatchObject({ code: 'cloud-credentials-refused', message: expect.stringContaining('AADSTS700213') })
    await expect(azure(f, { ...rest, federatedTokenFile: join(dir.path, 'missing') }).validate()).rejects.toMatchObject({ code: 'cloud-credentials-refused', message: expect.stringContaining('ENOENT') })
    expect(parseCredentials('azure', JSON.stringify({ ...rest, federated_token_file: file }))).toEqual({ ...rest, federatedTokenFile: file })
  })
})

describe('gcp', () => {
  test('a key Google did not issue and another project are refused; a rate limit (403 rateLimitExceeded) is not', async () => {
    await using f = await startGcpFake()
    const key = parseCredentials('gcp', f.key) as GcpCredentials
    const other = await startGcpFake()
    await other.stop()
    await expect(gcp(f, { ...key, private_key: other.key.private_key! }).validate()).rejects.toMatchObject({ code: 'cloud-credentials-refused', message: 'gcp refused the credentials (400 invalid_grant: Invalid JWT Signature.).' })
    // a 403 is a missing permission (naming the roles to grant), not bad credentials
    await expect(gcp(f, { ...key, project_id: 'someone-elses-1' }).validate()).rejects.toMatchObject({ code: 'cloud-refused', detail: { providerStatus: 403 }, message: expect.stringContaining('roles/compute.instanceAdmin.v1') })
    await expect(gcp(f, { ...key, private_key: '-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----' }).validate()).rejects.toMatchObject({ code: 'invalid-request' })
    f.throttle(3, (_r, u) => u.pathname.endsWith('/zones'))
    expect((await gcp(f).regions()).length).toBe(3)
    expect(f.throttled).toHaveLength(3)
  })

  test('insert: a requestId UUID derived from ours, a deny-all firewall for its tag, labels, user-data metadata', async () => {
    await using f = await startGcpFake()
    const g = gcp(f)
    expect(await g.validate()).toEqual({ account: 'muster-test-4711 (muster@muster-test-4711.iam.gserviceaccount.com)' })
    expect(requestUuid('prv-a')).toBe(requestUuid('prv-a'))
    expect(requestUuid('prv-a')).not.toBe(requestUuid('prv-b'))
    expect(requestUuid('prv-a')).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
    const one = await g.createMachine({ ...req, name: 'g-1', region: 'europe-west1-b', size: 'e2-small', userData: 'ud-1', requestId: 'prv-gggggggggggg', role: 'build' })
    expect(one.operation).toMatch(/^operation-/)
    await g.createMachine({ ...req, name: 'g-2', region: 'europe-west1-c', size: 'e2-small', userData: 'ud-2', requestId: 'prv-hhhhhhhhhhhh', inbound: { agentFrom: null, sshFrom: '192.0.2.0/24' } })
    expect(f.firewalls.map((x) => x.name)).toEqual(['muster-deny-inbound', expect.stringMatching(/^muster-[0-9a-f]{10}-ssh$/)])
    expect(f.firewalls[0]).toMatchObject({ direction: 'INGRESS', denied: [{ IPProtocol: 'all' }], sourceRanges: ['0.0.0.0/0'], targetTags: ['muster'], priority: 1000 })
    expect(f.firewalls[1]).toMatchObject({ allowed: [{ IPProtocol: 'tcp', ports: ['22'] }], sourceRanges: ['192.0.2.0/24'], priority: 900 })
    expect(f.book.created.map((m) => [m.name, m.userData, m.extra.requestId, m.extra.tags])).toEqual([
      ['g-1', 'ud-1', requestUuid('prv-gggggggggggg'), ['muster']],
      ['g-2', 'ud-2', requestUuid('prv-hhhhhhhhhhhh'), ['muster', (f.firewalls[1] as { targetTags: string[] }).targetTags[0]]],
    ])
    expect(f.book.created[0]!.labels).toEqual({ 'managed-by': 'muster', 'muster-request': 'prv-gggggggggggg', 'muster-role': 'build' })
    // one token for all of that: it is reused until it nears expiry
    expect(f.calls.filter((c) => c === 'POST /token')).toHaveLength(1)
    await expect(g.sizes()).rejects.toMatchObject({ code: 'invalid-request' })
    expect((await g.regions()).map((r) => [r.id, r.available])).toEqual([['europe-west1-b', true], ['europe-west1-c', true], ['us-central1-a', false]])
  })

  test('a failed insert Operation is read for its error; a repeated requestId gets the same Operation', async () => {
    await using f = await startGcpFake()
    f.failNextInsert = { code: 'QUOTA_EXCEEDED', message: "Quota 'CPUS' exceeded.  Limit: 8.0 in region europe-west1." }
    const g = gcp(f)
    const m = await g.createMachine({ ...req, name: 'g-q', region: 'europe-west1-b', size: 'e2-small', requestId: 'prv-qqqqqqqqqqqq' })
    expect(await g.getMachine(m.id)).toBeNull()
    expect(await g.operationError(m.id, m.operation!)).toBeNull() // still RUNNING
    await Bun.sleep(f.opMs + 20)
    expect(await g.operationError(m.id, m.operation!)).toBe("QUOTA_EXCEEDED: Quota 'CPUS' exceeded.  Limit: 8.0 in region europe-west1.")
    await expect(g.createMachine({ ...req, name: 'g-q', region: 'europe-west1-b', size: 'e2-small', requestId: 'prv-qqqqqqqqqqqq' })).rejects.toMatchObject({ message: expect.stringContaining('QUOTA_EXCEEDED') })
    expect(f.book.created).toHaveLength(0)
  })

  test('sizes: the binary’s architecture, not deprecated', async () => {
    await using f = await startGcpFake()
    expect((await gcp(f).sizes('europe-west1-b')).map((s) => s.id)).toEqual(['e2-small', 'e2-medium', 'c3-standard-4', 'n4-standard-2'])
    expect((await gcp(f, undefined, 'arm64').sizes('europe-west1-b')).map((s) => s.id)).toEqual(['t2a-standard-1', 'c4a-standard-1'])
  })
})
