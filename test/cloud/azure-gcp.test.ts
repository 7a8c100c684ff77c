// Azure and GCP specifics: token exchanges refused the way each identity
// service refuses them, the network each creates, names it must not touch,
// and Compute Engine's requestId.
import { describe, expect, test } from 'bun:test'
import { parseCredentials, type GcpCredentials } from '../../src/cloud/provider.ts'
import { AzureProvider } from '../../src/cloud/providers/azure.ts'
import { GcpProvider, requestUuid } from '../../src/cloud/providers/gcp.ts'
import { startAzureFake, type AzureFake } from '../fakes/azure.ts'
import { startGcpFake } from '../fakes/gcp.ts'

const creds = (f: AzureFake) => ({ tenantId: f.tenantId, clientId: f.clientId, clientSecret: f.clientSecret, subscriptionId: f.subscriptionId, resourceGroup: f.resourceGroup })
const req = { region: 'westeurope', size: 'Standard_B1s', userData: '#cloud-config\n', role: 'general' as const }

describe('azure', () => {
  test('an unknown tenant, a wrong secret, a missing resource group are refused; nothing is created', async () => {
    await using f = startAzureFake()
    const tenant = new AzureProvider({ ...creds(f), tenantId: 'contoso.onmicrosoft.com' }, f.url, f.url)
    await expect(tenant.validate()).rejects.toMatchObject({ code: 'cloud-credentials-refused', message: expect.stringContaining('AADSTS90002') })
    const secret = new AzureProvider({ ...creds(f), clientSecret: 'nope' }, f.url, f.url)
    await expect(secret.validate()).rejects.toMatchObject({ code: 'cloud-credentials-refused', message: expect.stringContaining('AADSTS7000215') })
    const group = new AzureProvider({ ...creds(f), resourceGroup: 'other-rg' }, f.url, f.url)
    await expect(group.validate()).rejects.toMatchObject({ code: 'cloud-provider-error', detail: { providerCode: 'ResourceGroupNotFound' } })
    await expect(new AzureProvider(creds(f), f.url, f.url).sizes()).rejects.toMatchObject({ code: 'invalid-request' })
    expect(f.book.created).toHaveLength(0)
  })

  test('a VM with its own IP and NIC in a per-region VNet whose NSG opens only the Agent port; deleted together', async () => {
    await using f = startAzureFake()
    const az = new AzureProvider(creds(f), f.url, f.url)
    const m = await az.createMachine({ ...req, name: 'az-1', requestId: 'prv-azazazazazaz' })
    expect(m).toMatchObject({ id: 'az-1', status: 'pending', providerStatus: 'Creating' })
    const types = [...f.resources.values()].map((r) => r.type).sort()
    expect(types).toEqual(['networkInterfaces', 'networkSecurityGroups', 'publicIPAddresses', 'virtualNetworks'])
    const nsg = [...f.resources.values()].find((r) => r.type === 'networkSecurityGroups')!.body as { properties: { securityRules: { properties: { destinationPortRange: string; direction: string; access: string } }[] } }
    expect(nsg.properties.securityRules.map((r) => [r.properties.direction, r.properties.access, r.properties.destinationPortRange])).toEqual([['Inbound', 'Allow', '7381']])
    expect(f.book.created[0]!.labels).toEqual({ 'managed-by': 'muster', 'muster-request': 'prv-azazazazazaz', 'muster-role': 'general' })
    // a VM of that name made for another request is left alone
    await expect(az.createMachine({ ...req, name: 'az-1', requestId: 'prv-otherotherot' })).rejects.toMatchObject({ code: 'cloud-provider-error', detail: { providerStatus: 409 } })
    expect(await az.findMachine({ requestId: 'prv-otherotherot', name: 'az-1', region: 'westeurope' })).toBeNull()
    await az.deleteMachine('az-1')
    expect([...f.resources.values()].map((r) => r.type).sort()).toEqual(['networkSecurityGroups', 'virtualNetworks'])
    expect(await az.getMachine('az-1')).toBeNull()
  })
})

describe('gcp', () => {
  test('a key Google did not issue and another project are refused', async () => {
    await using f = await startGcpFake()
    const key = parseCredentials('gcp', f.key) as GcpCredentials
    const other = await startGcpFake()
    await other.stop()
    const forged = new GcpProvider({ ...key, private_key: other.key.private_key! }, f.url, f.tokenUrl)
    await expect(forged.validate()).rejects.toMatchObject({ code: 'cloud-credentials-refused', message: 'gcp refused the credentials (400 invalid_grant: Invalid JWT Signature.).' })
    const project = new GcpProvider({ ...key, project_id: 'someone-elses-1' }, f.url, f.tokenUrl)
    await expect(project.validate()).rejects.toMatchObject({ code: 'cloud-credentials-refused', detail: { providerStatus: 403 } })
    await expect(new GcpProvider({ ...key, private_key: '-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----' }, f.url, f.tokenUrl).validate()).rejects.toMatchObject({ code: 'invalid-request' })
  })

  test('insert carries a requestId UUID derived from ours, a firewall rule for the Agent port once, labels, user-data metadata', async () => {
    await using f = await startGcpFake()
    const gcp = new GcpProvider(parseCredentials('gcp', f.key) as GcpCredentials, f.url, f.tokenUrl)
    expect(await gcp.validate()).toEqual({ account: 'muster-test-4711 (muster@muster-test-4711.iam.gserviceaccount.com)' })
    expect(requestUuid('prv-a')).toBe(requestUuid('prv-a'))
    expect(requestUuid('prv-a')).not.toBe(requestUuid('prv-b'))
    expect(requestUuid('prv-a')).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
    await gcp.createMachine({ name: 'g-1', region: 'europe-west1-b', size: 'e2-small', userData: 'ud-1', requestId: 'prv-gggggggggggg', role: 'build' })
    await gcp.createMachine({ name: 'g-2', region: 'europe-west1-c', size: 'e2-small', userData: 'ud-2', requestId: 'prv-hhhhhhhhhhhh', role: 'general' })
    expect(f.firewalls).toHaveLength(1)
    expect(f.firewalls[0]).toMatchObject({ name: 'muster-agent', allowed: [{ IPProtocol: 'tcp', ports: ['7381'] }], targetTags: ['muster-agent'] })
    expect(f.book.created.map((m) => [m.name, m.userData, m.extra.requestId, m.extra.tags])).toEqual([
      ['g-1', 'ud-1', requestUuid('prv-gggggggggggg'), ['muster-agent']],
      ['g-2', 'ud-2', requestUuid('prv-hhhhhhhhhhhh'), ['muster-agent']],
    ])
    expect(f.book.created[0]!.labels).toEqual({ 'managed-by': 'muster', 'muster-request': 'prv-gggggggggggg', 'muster-role': 'build' })
    // one token for all of that: it is reused until it nears expiry
    expect(f.calls.filter((c) => c === 'POST /token')).toHaveLength(1)
    await expect(gcp.sizes()).rejects.toMatchObject({ code: 'invalid-request' })
    expect((await gcp.regions()).map((r) => [r.id, r.available])).toEqual([['europe-west1-b', true], ['europe-west1-c', true], ['us-central1-a', false]])
  })
})
