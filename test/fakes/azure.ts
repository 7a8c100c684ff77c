// A local Azure: the Microsoft identity platform's client-credentials token
// endpoint (a client secret, or a federated token as client assertion;
// AADSTS errors as Azure words them; 503s on request) and Resource Manager
// for one subscription and resource group: api-version required and checked
// against the versions each resource type publishes (NoRegisteredProviderFound
// otherwise), bearer checked, locations, resource SKUs with capabilities and
// restrictions, network resources that must exist before they are referenced,
// VMs Creating → Succeeded with PowerState/running (or Failed on request),
// DELETE (202) carried out asynchronously (the VM is Deleting for a while,
// then gone) that takes with it what deleteOption says: the disk, the NIC
// (the VM's NIC reference), and the public IP (its own
// properties.deleteOption; a NIC's reference to it carries none); a NIC a VM
// uses or an IP a NIC holds cannot be deleted. Lists page with nextLink. A VNet
// PUT replaces its subnet list (a subnet in use cannot go: InUseSubnetCannotBeDeleted);
// subnets are resources of their own too. A PUT on a network resource (or a
// subnet of a VNet) another PUT is still working on is 409
// AnotherOperationInProgress. 429 throttling with Retry-After, or
// retry-after-ms / x-ms-retry-after-ms, or 429 RetryableError.
import { json, serveFake, type FakeMachine, type FakeServer } from './common.ts'

const LOCATIONS = [
  { name: 'westeurope', displayName: 'West Europe', metadata: { regionType: 'Physical' } },
  { name: 'eastus', displayName: 'East US', metadata: { regionType: 'Physical' } },
  { name: 'europe', displayName: 'Europe', metadata: { regionType: 'Logical' } },
]
const sku = (name: string, vcpus: number, memoryGB: number, gens: string | null, arch: string | null, restricted = false) => ({
  resourceType: 'virtualMachines',
  name,
  tier: 'Standard',
  size: name.replace(/^Standard_/, ''),
  locations: ['westeurope'],
  locationInfo: [{ location: 'westeurope', zones: ['1', '2', '3'] }],
  capabilities: [
    { name: 'vCPUs', value: String(vcpus) },
    { name: 'MemoryGB', value: String(memoryGB) },
    { name: 'OSVhdSizeMB', value: '1047552' },
    ...(gens ? [{ name: 'HyperVGenerations', value: gens }] : []),
    ...(arch ? [{ name: 'CpuArchitectureType', value: arch }] : []),
  ],
  restrictions: restricted ? [{ type: 'Location', values: ['westeurope'], restrictionInfo: { locations: ['westeurope'] }, reasonCode: 'NotAvailableForSubscription' }] : [],
})
/** As Microsoft.Compute/skus (2021-07-01) lists them: some only boot Gen1 images, some are Arm, one is not offered to this subscription. */
export const SKUS = [
  sku('Standard_B1s', 1, 1, 'V1,V2', 'x64'),
  sku('Standard_B2s', 2, 4, 'V1,V2', 'x64'),
  sku('Standard_D2s_v5', 2, 8, 'V1,V2', 'x64'),
  sku('Standard_A1_v2', 1, 2, 'V1', 'x64'),
  sku('Standard_D2ps_v5', 2, 8, 'V2', 'Arm64'),
  sku('Standard_D2as_v5', 2, 8, 'V1,V2', 'x64', true),
  { resourceType: 'disks', name: 'Premium_LRS', locations: ['westeurope'], capabilities: [], restrictions: [] },
]
/** Published api-versions per resource type (azure-rest-api-specs, stable). */
const VERSIONS: Record<string, string[]> = {
  compute: ['2023-09-01', '2024-03-01', '2024-07-01', '2024-11-01'],
  skus: ['2019-04-01', '2021-07-01'],
  network: ['2023-09-01', '2023-11-01', '2024-01-01', '2024-03-01', '2024-05-01'],
  locations: ['2020-01-01', '2021-01-01', '2022-12-01'],
}

const armError = (status: number, code: string, message: string, headers?: Record<string, string>) => json({ error: { code, message } }, status, headers)

export interface AzureResource {
  type: string
  body: { properties?: Record<string, unknown> } & Record<string, unknown>
  gets: number
}

export interface AzureFake extends FakeServer {
  tenantId: string
  clientId: string
  clientSecret: string
  subscriptionId: string
  resourceGroup: string
  /** The workload identity token a federated credential accepts as client assertion. */
  federatedToken: string
  /** Resource ids of the network resources that exist. */
  resources: Map<string, AzureResource>
  /** The next N token requests answer 503. */
  tokenFailures: number
  /** The next VM created ends Failed (its asynchronous create fails). */
  failNextVm: string | null
  /** "type api-version" of every ARM request. */
  versions: string[]
  /** How long a VM DELETE takes (the VM shows Deleting meanwhile). */
  deleteMs: number
  /** How long a PUT on a network resource keeps it busy (another PUT meanwhile: 409 AnotherOperationInProgress). */
  busyMs: number
  /** The next VM deletes leave their NIC and public IP behind (a VM made without deleteOption, or Azure leaving them). */
  leaveBehind: boolean
  /** Items per page of a list (then nextLink). */
  pageSize: number
  /** How the throttle answer asks to wait. */
  throttleStyle: 'retry-after' | 'retry-after-ms' | 'x-ms-retry-after-ms' | 'retryable-error'
  /** 409 AnotherOperationInProgress answers given. */
  conflicts: number
  /** The next N writes to network resources answer 409 AnotherOperationInProgress (another provision is on them). */
  conflictNext: number
}

export function startAzureFake(): AzureFake {
  const tenantId = '72f988bf-86f1-41af-91ab-2d7cd011db47'
  const clientId = '5d2a7c1e-0b7e-4d1c-9a55-3f0c2d1e8b90'
  const clientSecret = 'Xy8Q~abcdefghijklmnopqrstuvwxyz0123456789'
  const subscriptionId = '00000000-1111-2222-3333-444444444444'
  const resourceGroup = 'muster-rg'
  const federatedToken = 'eyJhbGciOiJSUzI1NiIsImtpZCI6ImFrcyJ9.workload-identity.sig'
  const tokens = new Set<string>()
  const resources: AzureFake['resources'] = new Map()
  const versions: string[] = []
  const group = `/subscriptions/${subscriptionId}/resourceGroups/${resourceGroup}`
  const busy = new Map<string, number>()

  const vmBody = (m: FakeMachine, expand: boolean) => {
    const failed = m.extra.failed as string | undefined
    const state = m.extra.deleting ? 'Deleting' : failed ? 'Failed' : m.running ? 'Succeeded' : 'Creating'
    const statuses = failed ? [{ code: 'ProvisioningState/failed/AllocationFailed', level: 'Error', message: failed }] : [{ code: `ProvisioningState/${m.running ? 'succeeded' : 'creating'}` }, { code: m.running ? 'PowerState/running' : 'PowerState/starting' }]
    return {
      id: `${group}/providers/Microsoft.Compute/virtualMachines/${m.name}`,
      name: m.name,
      type: 'Microsoft.Compute/virtualMachines',
      location: m.region,
      tags: m.labels,
      properties: { vmId: m.id, provisioningState: state, hardwareProfile: { vmSize: m.size }, networkProfile: m.extra.networkProfile, ...(expand ? { instanceView: { statuses } } : {}) },
    }
  }

  /** Deleting a VM: the disk always (deleteOption Delete), the NIC if its reference says Delete, its public IP if the IP says Delete. */
  const cascade = (m: FakeMachine) => {
    const nics = (m.extra.nics as { id: string; properties?: { deleteOption?: string } }[]) ?? []
    for (const ref of nics) {
      if (ref.properties?.deleteOption !== 'Delete') continue
      const nic = resources.get(ref.id)
      resources.delete(ref.id)
      const configs = (nic?.body.properties?.ipConfigurations as { properties: { publicIPAddress?: { id: string } } }[] | undefined) ?? []
      for (const c of configs) {
        const ipId = c.properties.publicIPAddress?.id
        if (ipId && resources.get(ipId)?.body.properties?.deleteOption === 'Delete') resources.delete(ipId)
      }
    }
  }

  const handle = async (req: Request, url: URL): Promise<Response> => {
    const book = fake.book
    // identity platform
    const tokenPath = url.pathname.match(/^\/([^/]+)\/oauth2\/v2\.0\/token$/)
    if (tokenPath && req.method === 'POST') {
      if (fake.tokenFailures > 0) {
        fake.tokenFailures--
        return json({ error: 'temporarily_unavailable', error_description: 'AADSTS50196: The server is temporarily unavailable.' }, 503)
      }
      const f = new URLSearchParams(await req.text())
      if (tokenPath[1] !== tenantId) return json({ error: 'invalid_request', error_description: `AADSTS90002: Tenant '${tokenPath[1]}' not found. Check to make sure you have the correct tenant ID.\r\nTrace ID: x`, error_codes: [90002] }, 400)
      if (f.get('grant_type') !== 'client_credentials') return json({ error: 'unsupported_grant_type', error_description: 'AADSTS70003: The app requested an unsupported grant type.' }, 400)
      if (f.get('client_id') !== clientId) return json({ error: 'unauthorized_client', error_description: `AADSTS700016: Application with identifier '${f.get('client_id')}' was not found in the directory.`, error_codes: [700016] }, 400)
      const assertion = f.get('client_assertion')
      if (assertion !== null) {
        if (f.get('client_assertion_type') !== 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer') return json({ error: 'invalid_request', error_description: 'AADSTS50027: Invalid client_assertion_type.' }, 400)
        if (assertion !== federatedToken) return json({ error: 'invalid_client', error_description: 'AADSTS700213: No matching federated identity record found for presented assertion subject.', error_codes: [700213] }, 400)
      } else if (f.get('client_secret') !== clientSecret) {
        return json({ error: 'invalid_client', error_description: `AADSTS7000215: Invalid client secret provided. Ensure the secret being sent in the request is the client secret value, not the client secret ID, for a secret added to app '${clientId}'.\r\nTrace ID: x`, error_codes: [7000215] }, 401)
      }
      if (f.get('scope') !== 'https://management.azure.com/.default') return json({ error: 'invalid_scope', error_description: 'AADSTS70011: The provided value for the input parameter scope is not valid.' }, 400)
      const t = `eyJ0eXAiOiJKV1QifQ.${crypto.randomUUID()}.sig`
      tokens.add(t)
      return json({ token_type: 'Bearer', expires_in: 3599, ext_expires_in: 3599, access_token: t })
    }
    // resource manager
    const auth = req.headers.get('authorization')
    if (!auth) return armError(401, 'AuthenticationFailed', "Authentication failed. The 'Authorization' header is missing.")
    if (!tokens.has(auth.replace(/^Bearer /, ''))) return armError(401, 'InvalidAuthenticationToken', 'The access token is invalid.')
    const version = url.searchParams.get('api-version')
    if (!version) return armError(400, 'MissingApiVersionParameter', 'The api-version query parameter (?api-version=) is required for all requests.')
    const path = url.pathname
    const kind = /\/providers\/Microsoft\.Compute\/skus$/.test(path) ? 'skus' : /\/providers\/Microsoft\.Network\//.test(path) ? 'network' : /\/providers\/Microsoft\.Compute\//.test(path) ? 'compute' : 'locations'
    versions.push(`${kind} ${version}`)
    if (!/^\d{4}-\d{2}-\d{2}(-preview)?$/.test(version)) return armError(400, 'InvalidApiVersionParameter', `The api-version '${version}' is invalid. The supported versions are '${VERSIONS[kind]!.join(',')}'.`)
    if (!VERSIONS[kind]!.includes(version)) return armError(400, 'NoRegisteredProviderFound', `No registered resource provider found for location 'westeurope' and API version '${version}' for type '${kind}'. The supported api-versions are '${VERSIONS[kind]!.join(', ')}'.`)
    const sub = path.match(/^\/subscriptions\/([^/]+)/)?.[1]
    if (sub !== subscriptionId) return armError(404, 'SubscriptionNotFound', `The subscription '${sub}' could not be found.`)
    // a list page, and a nextLink (absolute, with a $skiptoken) to the next one
    const paged = (items: unknown[]) => {
      const from = Number(url.searchParams.get('$skiptoken') ?? 0)
      const next = new URL(url)
      next.searchParams.set('$skiptoken', String(from + fake.pageSize))
      return json({ value: items.slice(from, from + fake.pageSize), ...(from + fake.pageSize < items.length ? { nextLink: next.toString() } : {}) })
    }
    if (path === `/subscriptions/${subscriptionId}/locations`) return paged(LOCATIONS.map((l) => ({ id: `/subscriptions/${subscriptionId}/locations/${l.name}`, ...l })))
    if (kind === 'skus') {
      const where = url.searchParams.get('$filter')?.match(/^location eq '([^']+)'$/)?.[1]
      return paged(where ? SKUS.filter((s) => s.locations.includes(where)) : SKUS)
    }
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
        if (!m.extra.deleting) {
          // asynchronous: Deleting now, gone (with what deleteOption takes) a moment later
          m.extra.deleting = true
          const leave = fake.leaveBehind
          setTimeout(() => {
            book.remove(m.id)
            if (!leave) cascade(m)
          }, fake.deleteMs)
        }
        return new Response(null, { status: 202, headers: { location: `${url.origin}/subscriptions/${subscriptionId}/providers/Microsoft.Compute/locations/${m.region}/operations/${crypto.randomUUID()}` } })
      }
      if (req.method === 'PUT') {
        const b = (await req.json()) as { location?: string; tags?: Record<string, string>; properties?: { hardwareProfile?: { vmSize?: string }; storageProfile?: { imageReference?: { sku?: string } }; osProfile?: { customData?: string; adminPassword?: string }; networkProfile?: { networkInterfaces?: { id: string; properties?: { deleteOption?: string } }[] } } }
        if (m) {
          // PUT is idempotent: the same VM again is no change; a changed customData is refused.
          const same = b.properties?.osProfile?.customData === Buffer.from(m.userData, 'utf8').toString('base64') && b.properties?.osProfile?.adminPassword === m.extra.adminPassword
          return same ? json(vmBody(m, false), 200) : armError(409, 'PropertyChangeNotAllowed', "Changing property 'osProfile.customData' is not allowed.")
        }
        const size = SKUS.find((s) => s.name === b.properties?.hardwareProfile?.vmSize && s.resourceType === 'virtualMachines')
        if (!size) return armError(400, 'InvalidParameter', `The value ${b.properties?.hardwareProfile?.vmSize} provided for the VM size is not valid.`)
        const gens = size.capabilities.find((c) => c.name === 'HyperVGenerations')?.value ?? 'V1'
        const imageSku = b.properties?.storageProfile?.imageReference?.sku
        if (imageSku === 'server' && !gens.includes('V2')) return armError(400, 'BadRequest', `The selected VM size '${size.name}' cannot boot Hypervisor Generation '2'. If this was a Create operation please check that the Hypervisor Generation of the Image matches the Hypervisor Generation of the selected VM Size.`)
        const nics = b.properties?.networkProfile?.networkInterfaces ?? []
        const nic = nics[0]?.id ?? ''
        if (!resources.has(nic)) return armError(400, 'InvalidResourceReference', `Resource ${nic} referenced by resource ${path} was not found.`)
        const pw = b.properties?.osProfile?.adminPassword ?? ''
        if (pw.length < 12 || !/[A-Z]/.test(pw) || !/[a-z]/.test(pw) || !/\d/.test(pw) || !/[^\w]/.test(pw)) return armError(400, 'InvalidParameter', 'The supplied password must be between 6-72 characters long and must satisfy at least 3 of password complexity requirements.')
        const customData = b.properties?.osProfile?.customData ?? ''
        if (customData.length > 87380) return armError(400, 'InvalidParameter', 'Custom data in OSProfile must be in Base64 encoding and with a maximum length of 87380 characters.')
        const failed = fake.failNextVm
        fake.failNextVm = null
        const created = book.add({ id: crypto.randomUUID(), name, region: b.location ?? '', size: size.name, userData: Buffer.from(customData, 'base64').toString('utf8'), labels: b.tags ?? {}, extra: { nic, nics, adminPassword: pw, networkProfile: b.properties?.networkProfile, ...(failed ? { failed } : {}) } })
        return json(vmBody(created, false), 201, { 'azure-asyncoperation': `${url.origin}/operations/${crypto.randomUUID()}` })
      }
    }
    const subnetPath = path.match(/^(.*\/providers\/Microsoft\.Network\/virtualNetworks\/[^/]+)\/subnets\/([^/]+)$/)
    const net = path.match(/\/providers\/Microsoft\.Network\/(networkSecurityGroups|virtualNetworks|publicIPAddresses|networkInterfaces)\/([^/]+)$/)
    if (subnetPath || net) {
      const now = Date.now()
      // one writer at a time per resource (a subnet's writes hold its VNet): ARM answers 409 to the next
      const lockId = subnetPath ? subnetPath[1]! : path
      if (req.method !== 'GET' && ((busy.get(lockId) ?? 0) > now || fake.conflictNext > 0)) {
        if (fake.conflictNext > 0) fake.conflictNext--
        fake.conflicts++
        return armError(409, 'AnotherOperationInProgress', `Operation PutVirtualNetworkOperation on resource ${lockId} is in progress; another operation cannot be started. Retry the request after it completes.`)
      }
      if (req.method !== 'GET') busy.set(lockId, now + fake.busyMs)
      const inUse = (id: string) => [...resources.values()].some((r) => JSON.stringify(r.body.properties ?? {}).includes(`"${id}"`)) || [...book.machines.values()].some((m) => JSON.stringify(m.extra.nics ?? []).includes(`"${id}"`))
      if (subnetPath) {
        const vnet = resources.get(subnetPath[1]!)
        if (!vnet) return armError(404, 'ResourceNotFound', `The Resource 'Microsoft.Network/virtualNetworks/${subnetPath[1]!.split('/').pop()}' under resource group '${resourceGroup}' was not found.`)
        const subnets = (vnet.body.properties!.subnets as { id?: string; name: string; properties: Record<string, unknown> }[] | undefined) ?? []
        const name = subnetPath[2]!
        const sn = subnets.find((x) => x.name === name)
        if (req.method === 'GET') return sn ? json({ id: path, ...sn, name, properties: { ...sn.properties, provisioningState: 'Succeeded' } }) : armError(404, 'NotFound', `Resource ${path} not found.`)
        if (req.method === 'PUT') {
          const b = (await req.json()) as { properties?: Record<string, unknown> }
          const next = { id: path, name, properties: b.properties ?? {} }
          vnet.body.properties!.subnets = [...subnets.filter((x) => x.name !== name), next]
          return json({ ...next, properties: { ...next.properties, provisioningState: 'Updating' } }, sn ? 200 : 201)
        }
      }
      if (net) {
        const r = resources.get(path)
        if (req.method === 'GET') {
          if (!r) return armError(404, 'ResourceNotFound', `The Resource 'Microsoft.Network/${net[1]}/${net[2]}' under resource group '${resourceGroup}' was not found.`)
          r.gets++
          return json({ ...r.body, properties: { ...r.body.properties, provisioningState: 'Succeeded', ...(net[1] === 'publicIPAddresses' ? { ipAddress: r.body.properties?.ipAddress } : {}) } })
        }
        if (req.method === 'DELETE') {
          if (!r) return new Response(null, { status: 204 })
          if (net[1] === 'publicIPAddresses' && inUse(path)) return armError(400, 'PublicIPAddressCannotBeDeleted', `Public IP address ${path} can not be deleted since it is still allocated to resource ${[...resources.keys()].find((k) => JSON.stringify(resources.get(k)!.body.properties ?? {}).includes(path))}.`)
          if (net[1] === 'networkInterfaces' && inUse(path)) return armError(400, 'NicInUse', `Network Interface ${path} is used by existing resource. In order to delete the network interface, it must be dissociated from the resource.`)
          setTimeout(() => resources.delete(path), fake.deleteMs)
          return new Response(null, { status: 202 })
        }
        if (req.method === 'PUT') {
          const b = (await req.json()) as { properties?: { networkSecurityGroup?: { id: string }; ipConfigurations?: { properties: { subnet: { id: string }; publicIPAddress?: { id: string } } }[]; subnets?: { name: string; properties: { networkSecurityGroup?: { id: string } } }[] } & Record<string, unknown> }
          const subnetExists = (id: string) => {
            const [vnetId, name] = id.split('/subnets/')
            const v = resources.get(vnetId!)
            return Boolean(v && ((v.body.properties?.subnets as { name: string }[] | undefined) ?? []).some((x) => x.name === name))
          }
          const refs = [...(b.properties?.ipConfigurations?.flatMap((c) => [c.properties.publicIPAddress?.id ?? '']) ?? []), ...(b.properties?.subnets?.map((x) => x.properties.networkSecurityGroup?.id ?? '') ?? []), b.properties?.networkSecurityGroup?.id ?? ''].filter(Boolean)
          const missing = refs.find((id) => !resources.has(id)) ?? b.properties?.ipConfigurations?.map((c) => c.properties.subnet.id).find((id) => !subnetExists(id))
          if (missing) return armError(400, 'InvalidResourceReference', `Resource ${missing} referenced by resource ${path} was not found.`)
          if (net[1] === 'virtualNetworks' && r) {
            // a VNet PUT replaces the subnet list: a subnet in use that it leaves out cannot be deleted
            const kept = new Set((b.properties?.subnets ?? []).map((x) => x.name))
            const dropped = ((r.body.properties?.subnets as { name: string }[] | undefined) ?? []).find((x) => !kept.has(x.name) && inUse(`${path}/subnets/${x.name}`))
            if (dropped) return armError(400, 'InUseSubnetCannotBeDeleted', `Subnet ${dropped.name} is in use by ${path}/subnets/${dropped.name} and cannot be deleted.`)
          }
          // A reference carries only the id (ReferenceObject): nested properties on it are not the resource's.
          const ipConfigurations = b.properties?.ipConfigurations?.map((c) => ({ ...c, properties: { ...c.properties, ...(c.properties.publicIPAddress ? { publicIPAddress: { id: c.properties.publicIPAddress.id } } : {}) } }))
          const subnets = b.properties?.subnets?.map((x) => ({ id: `${path}/subnets/${x.name}`, ...x }))
          const ip = net[1] === 'publicIPAddresses' ? { ipAddress: (r?.body.properties?.ipAddress as string | undefined) ?? `198.51.100.${(resources.size % 250) + 1}` } : {}
          const body = { id: path, name: net[2], type: `Microsoft.Network/${net[1]}`, ...b, properties: { ...b.properties, ...(ipConfigurations ? { ipConfigurations } : {}), ...(subnets ? { subnets } : net[1] === 'virtualNetworks' ? { subnets: [] } : {}), ...ip, provisioningState: 'Updating' } }
          const status = r ? 200 : 201
          resources.set(path, { type: net[1]!, body, gets: 0 })
          return json(body, status)
        }
      }
    }
    return armError(404, 'InvalidResourceType', `The resource type could not be found in the namespace for api version '${version}'.`)
  }
  const fake = Object.assign(
    serveFake({
      handle,
      // ARM throttles with 429 and Retry-After (https://learn.microsoft.com/azure/azure-resource-manager/management/request-limits-and-throttling);
      // some services give milliseconds (retry-after-ms, x-ms-retry-after-ms), some 429 RetryableError.
      throttle: (_req, _url, waitS): Response => {
        const style: AzureFake['throttleStyle'] = fake.throttleStyle
        if (style === 'retryable-error') return armError(429, 'RetryableError', 'A retryable error occurred.', { 'Retry-After': String(waitS) })
        const headers: Record<string, string> = style === 'retry-after' ? { 'Retry-After': String(waitS) } : { [style]: String(waitS * 1000) }
        return armError(429, 'TooManyRequests', 'The request is being throttled as the limit has been reached for operation type - Read_ObservationWindow_00:05:00.', headers)
      },
      isCreate: (req, url) => req.method === 'PUT' && /\/virtualMachines\/[^/]+$/.test(url.pathname),
    }),
    { tokenFailures: 0, failNextVm: null as string | null, deleteMs: 60, busyMs: 30, leaveBehind: false, pageSize: 2, throttleStyle: 'retry-after' as AzureFake['throttleStyle'], conflicts: 0, conflictNext: 0 },
  )
  return Object.assign(fake, { tenantId, clientId, clientSecret, subscriptionId, resourceGroup, federatedToken, resources, versions })
}
