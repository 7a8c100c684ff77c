// A local Azure: the Microsoft identity platform's client-credentials token
// endpoint (AADSTS errors as Azure words them) and Resource Manager for one
// subscription and resource group: api-version required, bearer checked,
// locations, VM sizes, network resources that must exist before they are
// referenced, VMs Creating → Succeeded with PowerState/running, asynchronous
// DELETE (202) that takes the NIC, public IP and disk with it.
import { json, serveFake, type FakeMachine, type FakeServer } from './common.ts'

const LOCATIONS = [
  { name: 'westeurope', displayName: 'West Europe', metadata: { regionType: 'Physical' } },
  { name: 'eastus', displayName: 'East US', metadata: { regionType: 'Physical' } },
  { name: 'europe', displayName: 'Europe', metadata: { regionType: 'Logical' } },
]
const SIZES = [
  { name: 'Standard_B1s', numberOfCores: 1, osDiskSizeInMB: 1047552, resourceDiskSizeInMB: 4096, memoryInMB: 1024, maxDataDiskCount: 2 },
  { name: 'Standard_B2s', numberOfCores: 2, osDiskSizeInMB: 1047552, resourceDiskSizeInMB: 8192, memoryInMB: 4096, maxDataDiskCount: 4 },
  { name: 'Standard_D2s_v5', numberOfCores: 2, osDiskSizeInMB: 1047552, resourceDiskSizeInMB: 0, memoryInMB: 8192, maxDataDiskCount: 4 },
]

const armError = (status: number, code: string, message: string) => json({ error: { code, message } }, status)

export interface AzureFake extends FakeServer {
  tenantId: string
  clientId: string
  clientSecret: string
  subscriptionId: string
  resourceGroup: string
  /** Resource ids of the network resources that exist. */
  resources: Map<string, { type: string; body: Record<string, unknown>; gets: number }>
}

export function startAzureFake(): AzureFake {
  const tenantId = '72f988bf-86f1-41af-91ab-2d7cd011db47'
  const clientId = '5d2a7c1e-0b7e-4d1c-9a55-3f0c2d1e8b90'
  const clientSecret = 'Xy8Q~abcdefghijklmnopqrstuvwxyz0123456789'
  const subscriptionId = '00000000-1111-2222-3333-444444444444'
  const resourceGroup = 'muster-rg'
  const tokens = new Set<string>()
  const resources: AzureFake['resources'] = new Map()
  const group = `/subscriptions/${subscriptionId}/resourceGroups/${resourceGroup}`

  const vmBody = (m: FakeMachine, expand: boolean) => ({
    id: `${group}/providers/Microsoft.Compute/virtualMachines/${m.name}`,
    name: m.name,
    type: 'Microsoft.Compute/virtualMachines',
    location: m.region,
    tags: m.labels,
    properties: {
      vmId: m.id,
      provisioningState: m.running ? 'Succeeded' : 'Creating',
      hardwareProfile: { vmSize: m.size },
      ...(expand ? { instanceView: { statuses: [{ code: `ProvisioningState/${m.running ? 'succeeded' : 'creating'}` }, ...(m.running ? [{ code: 'PowerState/running' }] : [{ code: 'PowerState/starting' }])] } } : {}),
    },
  })

  const fake = serveFake(async (req, url) => {
    const book = fake.book
    // identity platform
    const tokenPath = url.pathname.match(/^\/([^/]+)\/oauth2\/v2\.0\/token$/)
    if (tokenPath && req.method === 'POST') {
      const f = new URLSearchParams(await req.text())
      if (tokenPath[1] !== tenantId) return json({ error: 'invalid_request', error_description: `AADSTS90002: Tenant '${tokenPath[1]}' not found. Check to make sure you have the correct tenant ID.\r\nTrace ID: x`, error_codes: [90002] }, 400)
      if (f.get('grant_type') !== 'client_credentials') return json({ error: 'unsupported_grant_type', error_description: 'AADSTS70003: The app requested an unsupported grant type.' }, 400)
      if (f.get('client_id') !== clientId) return json({ error: 'unauthorized_client', error_description: `AADSTS700016: Application with identifier '${f.get('client_id')}' was not found in the directory.`, error_codes: [700016] }, 400)
      if (f.get('client_secret') !== clientSecret) return json({ error: 'invalid_client', error_description: `AADSTS7000215: Invalid client secret provided. Ensure the secret being sent in the request is the client secret value, not the client secret ID, for a secret added to app '${clientId}'.\r\nTrace ID: x`, error_codes: [7000215] }, 401)
      if (f.get('scope') !== 'https://management.azure.com/.default') return json({ error: 'invalid_scope', error_description: 'AADSTS70011: The provided value for the input parameter scope is not valid.' }, 400)
      const t = `eyJ0eXAiOiJKV1QifQ.${crypto.randomUUID()}.sig`
      tokens.add(t)
      return json({ token_type: 'Bearer', expires_in: 3599, ext_expires_in: 3599, access_token: t })
    }
    // resource manager
    const auth = req.headers.get('authorization')
    if (!auth) return armError(401, 'AuthenticationFailed', "Authentication failed. The 'Authorization' header is missing.")
    if (!tokens.has(auth.replace(/^Bearer /, ''))) return armError(401, 'InvalidAuthenticationToken', 'The access token is invalid.')
    if (!url.searchParams.get('api-version')) return armError(400, 'MissingApiVersionParameter', "The api-version query parameter (?api-version=) is required for all requests.")
    const path = url.pathname
    const sub = path.match(/^\/subscriptions\/([^/]+)/)?.[1]
    if (sub !== subscriptionId) return armError(404, 'SubscriptionNotFound', `The subscription '${sub}' could not be found.`)
    if (path === `/subscriptions/${subscriptionId}/locations`) return json({ value: LOCATIONS.map((l) => ({ id: `/subscriptions/${subscriptionId}/locations/${l.name}`, ...l })) })
    const sizes = path.match(/^\/subscriptions\/[^/]+\/providers\/Microsoft\.Compute\/locations\/([^/]+)\/vmSizes$/)
    if (sizes) return LOCATIONS.some((l) => l.name === sizes[1]) ? json({ value: SIZES }) : armError(404, 'NoRegisteredProviderFound', `No registered resource provider found for location '${sizes[1]}'.`)
    const rg = path.match(/^\/subscriptions\/[^/]+\/resourceGroups\/([^/]+)/)?.[1]
    if (decodeURIComponent(rg ?? '') !== resourceGroup) return armError(404, 'ResourceGroupNotFound', `Resource group '${rg}' could not be found.`)
    if (path === `${group}/providers/Microsoft.Compute/virtualMachines` && req.method === 'GET') return json({ value: [...book.machines.values()].map((m) => vmBody(m, false)) })
    const vm = path.match(/\/providers\/Microsoft\.Compute\/virtualMachines\/([^/]+)$/)
    if (vm) {
      const name = decodeURIComponent(vm[1]!)
      const m = [...book.machines.values()].find((x) => x.name === name)
      if (req.method === 'GET') return m ? json(vmBody(m, url.searchParams.get('$expand') === 'instanceView')) : armError(404, 'ResourceNotFound', `The Resource 'Microsoft.Compute/virtualMachines/${name}' under resource group '${resourceGroup}' was not found.`)
      if (req.method === 'DELETE') {
        if (!m) return new Response(null, { status: 204 })
        book.remove(m.id)
        for (const id of [...resources.keys()]) if (id.endsWith(`/networkInterfaces/${name}-nic`) || id.endsWith(`/publicIPAddresses/${name}-ip`)) resources.delete(id)
        return new Response(null, { status: 202, headers: { location: `${url.origin}/subscriptions/${subscriptionId}/providers/Microsoft.Compute/locations/${m.region}/operations/${crypto.randomUUID()}` } })
      }
      if (req.method === 'PUT') {
        const b = (await req.json()) as { location?: string; tags?: Record<string, string>; properties?: { hardwareProfile?: { vmSize?: string }; osProfile?: { customData?: string; adminPassword?: string }; networkProfile?: { networkInterfaces?: { id: string }[] } } }
        if (m) return armError(409, 'PropertyChangeNotAllowed', "Changing property 'osProfile.customData' is not allowed.")
        if (!SIZES.some((s) => s.name === b.properties?.hardwareProfile?.vmSize)) return armError(400, 'InvalidParameter', `The value ${b.properties?.hardwareProfile?.vmSize} provided for the VM size is not valid.`)
        const nic = b.properties?.networkProfile?.networkInterfaces?.[0]?.id ?? ''
        if (!resources.has(nic)) return armError(400, 'InvalidResourceReference', `Resource ${nic} referenced by resource ${path} was not found.`)
        const pw = b.properties?.osProfile?.adminPassword ?? ''
        if (pw.length < 12 || !/[A-Z]/.test(pw) || !/[a-z]/.test(pw) || !/\d/.test(pw) || !/[^\w]/.test(pw)) return armError(400, 'InvalidParameter', 'The supplied password must be between 6-72 characters long and must satisfy at least 3 of password complexity requirements.')
        const customData = b.properties?.osProfile?.customData ?? ''
        if (customData.length > 87380) return armError(400, 'InvalidParameter', 'Custom data in OSProfile must be in Base64 encoding and with a maximum length of 87380 characters.')
        const created = book.add({ id: crypto.randomUUID(), name, region: b.location ?? '', size: b.properties!.hardwareProfile!.vmSize!, userData: Buffer.from(customData, 'base64').toString('utf8'), labels: b.tags ?? {}, extra: { nic } })
        return json(vmBody(created, false), 201, { 'azure-asyncoperation': `${url.origin}/operations/${crypto.randomUUID()}` })
      }
    }
    const net = path.match(/\/providers\/Microsoft\.Network\/(networkSecurityGroups|virtualNetworks|publicIPAddresses|networkInterfaces)\/([^/]+)$/)
    if (net) {
      const r = resources.get(path)
      if (req.method === 'GET') {
        if (!r) return armError(404, 'ResourceNotFound', `The Resource 'Microsoft.Network/${net[1]}/${net[2]}' under resource group '${resourceGroup}' was not found.`)
        r.gets++
        return json({ ...r.body, properties: { ...(r.body.properties as object), provisioningState: 'Succeeded', ...(net[1] === 'publicIPAddresses' ? { ipAddress: '198.51.100.7' } : {}) } })
      }
      if (req.method === 'PUT') {
        const b = (await req.json()) as { properties?: { ipConfigurations?: { properties: { subnet: { id: string }; publicIPAddress?: { id: string } } }[]; subnets?: { properties: { networkSecurityGroup?: { id: string } } }[] } }
        const refs = [
          ...(b.properties?.ipConfigurations?.flatMap((c) => [c.properties.subnet.id.replace(/\/subnets\/[^/]+$/, ''), c.properties.publicIPAddress?.id ?? '']) ?? []),
          ...(b.properties?.subnets?.map((s) => s.properties.networkSecurityGroup?.id ?? '') ?? []),
        ].filter(Boolean)
        const missing = refs.find((id) => !resources.has(id))
        if (missing) return armError(400, 'InvalidResourceReference', `Resource ${missing} referenced by resource ${path} was not found.`)
        const body = { id: path, name: net[2], type: `Microsoft.Network/${net[1]}`, ...b, properties: { ...b.properties, provisioningState: 'Updating' } }
        const status = r ? 200 : 201
        resources.set(path, { type: net[1]!, body, gets: 0 })
        return json(body, status)
      }
    }
    return armError(404, 'InvalidResourceType', `The resource type could not be found in the namespace for api version '${url.searchParams.get('api-version')}'.`)
  })
  return Object.assign(fake, { tenantId, clientId, clientSecret, subscriptionId, resourceGroup, resources })
}
