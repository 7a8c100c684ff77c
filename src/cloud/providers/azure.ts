// Azure Resource Manager (https://learn.microsoft.com/en-us/rest/api/compute/)
// with a service principal's client-credentials token (tenant, client id,
// secret), inside one existing resource group. A machine is a VM with its own
// public IP and NIC (both deleted with it), in a per-region VNet whose network
// security group opens only the Agent's port. PUT is idempotent by name; the
// request id is a tag, and a VM of that name made for another request is never
// touched. Machine ids are VM names.
import { MusterError } from '../../errors.ts'
import { randomSecret } from '../../crypto/tokens.ts'
import { callJson, request, unless404 } from '../http.ts'
import type { AzureCredentials, CloudProvider, CreateMachine, Machine, MachineRef, MachineStatus, Region, Size } from '../provider.ts'

const COMPUTE = '2024-07-01'
const NETWORK = '2024-05-01'
const RESOURCES = '2022-12-01'
const AGENT_PORT = 7381

interface Vm {
  name: string
  tags?: Record<string, string>
  properties: { provisioningState?: string; instanceView?: { statuses?: { code: string }[] } }
}

const describe = (b: unknown) => {
  const e = (b as { error?: { code?: string; message?: string } }).error
  return { code: e?.code, message: e?.message }
}

export class AzureProvider implements CloudProvider {
  readonly name = 'azure' as const
  readonly maxUserDataBytes = 64 * 1024
  private token: { value: string; until: number } | null = null

  constructor(
    private readonly creds: AzureCredentials,
    private readonly arm: string,
    private readonly login: string,
  ) {}

  /** Client credentials → an ARM access token, kept until a minute before it expires. */
  private async accessToken(): Promise<string> {
    if (this.token && Date.now() < this.token.until) return this.token.value
    const url = `${this.login}/${encodeURIComponent(this.creds.tenantId)}/oauth2/v2.0/token`
    const body = new URLSearchParams({ grant_type: 'client_credentials', client_id: this.creds.clientId, client_secret: this.creds.clientSecret, scope: 'https://management.azure.com/.default' })
    const a = await request('azure', url, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: body.toString() })
    let j: { access_token?: string; expires_in?: number; error?: string; error_description?: string } = {}
    try {
      j = JSON.parse(a.text)
    } catch {}
    if (a.status !== 200 || !j.access_token) {
      const why = [j.error, j.error_description?.split(/\r?\n/)[0]].filter(Boolean).join(': ')
      throw new MusterError('cloud-credentials-refused', `azure refused the credentials (${a.status}${why ? ` ${why}` : ''}).`, { providerStatus: a.status, providerCode: j.error ?? null })
    }
    this.token = { value: j.access_token, until: Date.now() + Math.max((j.expires_in ?? 3600) - 60, 30) * 1000 }
    return this.token.value
  }

  private async call<T>(method: string, path: string, apiVersion: string, body?: unknown) {
    const sep = path.includes('?') ? '&' : '?'
    const headers = { authorization: `Bearer ${await this.accessToken()}` }
    return callJson<T>('azure', `${this.arm}${path}${sep}api-version=${apiVersion}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) }, describe)
  }

  private get sub(): string {
    return `/subscriptions/${this.creds.subscriptionId}`
  }
  private get group(): string {
    return `${this.sub}/resourceGroups/${encodeURIComponent(this.creds.resourceGroup)}`
  }

  async validate() {
    await this.call('GET', `${this.group}/providers/Microsoft.Compute/virtualMachines`, COMPUTE)
    return { account: `${this.creds.subscriptionId}/${this.creds.resourceGroup}` }
  }

  async regions(): Promise<Region[]> {
    const { body } = await this.call<{ value: { name: string; displayName: string; metadata?: { regionType?: string } }[] }>('GET', `${this.sub}/locations`, RESOURCES)
    return body.value.filter((l) => l.metadata?.regionType !== 'Logical').map((l) => ({ id: l.name, name: l.displayName, available: true }))
  }

  async sizes(region?: string): Promise<Size[]> {
    if (!region) throw new MusterError('invalid-request', 'azure lists sizes per region: give a region (--region).', { field: 'region' })
    const { body } = await this.call<{ value: { name: string; numberOfCores: number; memoryInMB: number; osDiskSizeInMB: number }[] }>('GET', `${this.sub}/providers/Microsoft.Compute/locations/${encodeURIComponent(region)}/vmSizes`, COMPUTE)
    return body.value.map((s) => ({ id: s.name, cpus: s.numberOfCores, memoryMB: s.memoryInMB, diskGB: Math.round(s.osDiskSizeInMB / 1024), priceMonthly: null }))
  }

  private async vm(name: string, expand = false): Promise<Vm | null> {
    const r = await unless404(this.call<Vm>('GET', `${this.group}/providers/Microsoft.Compute/virtualMachines/${encodeURIComponent(name)}${expand ? '?$expand=instanceView' : ''}`, COMPUTE))
    return r && r.body
  }

  async findMachine({ requestId, name }: MachineRef): Promise<Machine | null> {
    const vm = await this.vm(name, true)
    return vm && vm.tags?.['muster-request'] === requestId ? this.machine(vm) : null
  }

  /** PUTs a network resource and waits (briefly) until Azure reports it provisioned. */
  private async ensure(path: string, body: unknown): Promise<string> {
    const id = `${this.group}/providers/${path}`
    await this.call('PUT', id, NETWORK, body)
    for (let i = 0; i < 60; i++) {
      const { body: r } = await this.call<{ properties?: { provisioningState?: string } }>('GET', id, NETWORK)
      const state = r.properties?.provisioningState
      if (state === 'Succeeded') return id
      if (state === 'Failed') throw new MusterError('cloud-provider-error', `azure could not provision ${path}.`)
      await Bun.sleep(1000)
    }
    throw new MusterError('cloud-provider-error', `azure did not finish provisioning ${path} within a minute.`)
  }

  async createMachine(req: CreateMachine): Promise<Machine> {
    const existing = await this.vm(req.name, true)
    if (existing) {
      if (existing.tags?.['muster-request'] === req.requestId) return this.machine(existing)
      throw new MusterError('cloud-provider-error', `azure already has a VM named ${req.name} in ${this.creds.resourceGroup} that muster did not create for this request.`, { providerStatus: 409 })
    }
    const location = req.region
    const nsg = await this.ensure(`Microsoft.Network/networkSecurityGroups/muster-agent-${location}`, {
      location,
      properties: { securityRules: [{ name: 'muster-agent', properties: { priority: 1000, direction: 'Inbound', access: 'Allow', protocol: 'Tcp', sourceAddressPrefix: '*', sourcePortRange: '*', destinationAddressPrefix: '*', destinationPortRange: String(AGENT_PORT) } }] },
    })
    const vnet = await this.ensure(`Microsoft.Network/virtualNetworks/muster-vnet-${location}`, {
      location,
      properties: { addressSpace: { addressPrefixes: ['10.73.0.0/16'] }, subnets: [{ name: 'muster', properties: { addressPrefix: '10.73.0.0/20', networkSecurityGroup: { id: nsg } } }] },
    })
    const ip = await this.ensure(`Microsoft.Network/publicIPAddresses/${req.name}-ip`, { location, sku: { name: 'Standard' }, properties: { publicIPAllocationMethod: 'Static' } })
    const nic = await this.ensure(`Microsoft.Network/networkInterfaces/${req.name}-nic`, {
      location,
      properties: { ipConfigurations: [{ name: 'ipconfig1', properties: { subnet: { id: `${vnet}/subnets/muster` }, publicIPAddress: { id: ip, properties: { deleteOption: 'Delete' } } } }] },
    })
    const { body } = await this.call<Vm>('PUT', `${this.group}/providers/Microsoft.Compute/virtualMachines/${encodeURIComponent(req.name)}`, COMPUTE, {
      location,
      tags: { 'managed-by': 'muster', 'muster-request': req.requestId, 'muster-role': req.role },
      properties: {
        hardwareProfile: { vmSize: req.size },
        storageProfile: {
          imageReference: { publisher: 'Canonical', offer: 'ubuntu-24_04-lts', sku: 'server', version: 'latest' },
          osDisk: { createOption: 'FromImage', deleteOption: 'Delete', managedDisk: { storageAccountType: 'StandardSSD_LRS' } },
        },
        // Azure requires a login; nothing here uses one, so it is random and never kept.
        osProfile: { computerName: req.name, adminUsername: 'muster-admin', adminPassword: `Aa1!${randomSecret()}`, customData: Buffer.from(req.userData, 'utf8').toString('base64') },
        networkProfile: { networkInterfaces: [{ id: nic, properties: { primary: true, deleteOption: 'Delete' } }] },
      },
    })
    return this.machine(body)
  }

  async getMachine(id: string): Promise<Machine | null> {
    const vm = await this.vm(id, true)
    return vm ? this.machine(vm, true) : null
  }

  async deleteMachine(id: string): Promise<void> {
    await unless404(this.call('DELETE', `${this.group}/providers/Microsoft.Compute/virtualMachines/${encodeURIComponent(id)}`, COMPUTE))
  }

  private async machine(vm: Vm, withAddress = false): Promise<Machine> {
    const provisioning = vm.properties.provisioningState ?? 'Creating'
    const power = vm.properties.instanceView?.statuses?.find((s) => s.code.startsWith('PowerState/'))?.code.slice('PowerState/'.length)
    let status: MachineStatus = 'pending'
    if (provisioning === 'Failed') status = 'failed'
    else if (provisioning === 'Deleting') status = 'deleting'
    else if (power === 'running') status = 'running'
    else if (power === 'stopped' || power === 'deallocated' || power === 'stopping' || power === 'deallocating') status = 'stopped'
    let address: string | null = null
    if (withAddress && status === 'running') {
      const ip = await this.call<{ properties?: { ipAddress?: string } }>('GET', `${this.group}/providers/Microsoft.Network/publicIPAddresses/${encodeURIComponent(`${vm.name}-ip`)}`, NETWORK).catch(() => null)
      address = ip?.body.properties?.ipAddress ?? null
    }
    return { id: vm.name, status, providerStatus: power ? `${provisioning}/${power}` : provisioning, address }
  }
}
