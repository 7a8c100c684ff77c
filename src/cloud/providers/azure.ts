// Azure Resource Manager (https://learn.microsoft.com/en-us/rest/api/compute/)
// inside one existing resource group, with a token from azure-auth.ts. A
// machine is a VM with its own Standard public IP and NIC in a per-region
// VNet. The NIC carries a network security group that denies all inbound but
// what muster was told to open. Deletion takes everything of the VM with it:
// the NIC by the VM's NIC reference deleteOption, the public IP by its own
// `properties.deleteOption` ("what happens to the public IP address when the
// VM using it is deleted", PublicIPAddressPropertiesFormat, Microsoft.Network
// 2024-05-01), the disk by osDisk.deleteOption. The node's address is that
// public IP: the metadata service reports none for Standard public IPs.
// PUT is idempotent by name; the request id is a tag, and a VM of that name
// made for another request is never touched. Machine ids are VM names.
import { MusterError } from '../../errors.ts'
import { randomSecret } from '../../crypto/tokens.ts'
import { callJson, unless404 } from '../http.ts'
import { inboundKey, inboundRules, type AzureCredentials, type CloudProvider, type CreateMachine, type Inbound, type Machine, type MachineRef, type MachineStatus, type ProviderContext, type Region, type Size } from '../provider.ts'
import { AzureToken } from './azure-auth.ts'

/** api-versions each resource type publishes (azure-rest-api-specs, stable). */
export const API = { compute: '2024-07-01', network: '2024-05-01', resources: '2022-12-01', skus: '2021-07-01' } as const

interface Vm {
  name: string
  tags?: Record<string, string>
  properties: { provisioningState?: string; instanceView?: { statuses?: { code: string; message?: string }[] } }
}
/** Microsoft.Compute/skus (2021-07-01): capabilities as name/value strings, restrictions per location. */
interface Sku {
  resourceType: string
  name: string
  locations?: string[]
  capabilities?: { name: string; value: string }[]
  restrictions?: { type: string; values?: string[]; reasonCode?: string }[]
}

const describe = (b: unknown) => {
  const e = (b as { error?: { code?: string; message?: string } }).error
  return { code: e?.code, message: e?.message }
}

export class AzureProvider implements CloudProvider {
  readonly name = 'azure' as const
  readonly maxUserDataBytes = 64 * 1024
  private readonly token: AzureToken

  constructor(
    private readonly creds: AzureCredentials,
    private readonly ctx: Pick<ProviderContext, 'retry' | 'arch'> & { arm: string; login: string },
  ) {
    this.token = new AzureToken(creds, ctx)
  }

  private async call<T>(method: string, path: string, apiVersion: string, body?: unknown) {
    const sep = path.includes('?') ? '&' : '?'
    const headers = { authorization: `Bearer ${await this.token.get()}` }
    return callJson<T>('azure', `${this.ctx.arm}${path}${sep}api-version=${apiVersion}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) }, describe, { policy: this.ctx.retry })
  }

  private get sub(): string {
    return `/subscriptions/${this.creds.subscriptionId}`
  }
  private get group(): string {
    return `${this.sub}/resourceGroups/${encodeURIComponent(this.creds.resourceGroup)}`
  }

  async validate() {
    await this.call('GET', `${this.group}/providers/Microsoft.Compute/virtualMachines`, API.compute)
    return { account: `${this.creds.subscriptionId}/${this.creds.resourceGroup}` }
  }

  async regions(): Promise<Region[]> {
    const { body } = await this.call<{ value: { name: string; displayName: string; metadata?: { regionType?: string } }[] }>('GET', `${this.sub}/locations`, API.resources)
    return body.value.filter((l) => l.metadata?.regionType !== 'Logical').map((l) => ({ id: l.name, name: l.displayName, available: true }))
  }

  /**
   * From the resource SKUs (they say what vmSizes does not): only VM sizes the
   * `server` image can boot — Hyper-V generation 2, the binary's CPU
   * architecture — and not restricted for this subscription in the region.
   */
  async sizes(region?: string): Promise<Size[]> {
    if (!region) throw new MusterError('invalid-request', 'azure lists sizes per region: give a region (--region).', { field: 'region' })
    const filter = encodeURIComponent(`location eq '${region}'`)
    const { body } = await this.call<{ value: Sku[] }>('GET', `${this.sub}/providers/Microsoft.Compute/skus?$filter=${filter}`, API.skus)
    const arch = this.ctx.arch === 'arm64' ? 'arm64' : 'x64'
    const here = (xs: string[] | undefined) => (xs ?? []).some((x) => x.toLowerCase() === region.toLowerCase())
    return body.value
      .filter((s) => s.resourceType === 'virtualMachines' && (s.locations === undefined || here(s.locations)))
      .filter((s) => !(s.restrictions ?? []).some((r) => r.type === 'Location' && (r.values === undefined || here(r.values))))
      .filter((s) => {
        const cap = (n: string) => s.capabilities?.find((c) => c.name === n)?.value
        const gens = (cap('HyperVGenerations') ?? 'V1').split(',').map((g) => g.trim())
        return gens.includes('V2') && (cap('CpuArchitectureType') ?? 'x64').toLowerCase() === arch
      })
      .map((s) => {
        const cap = (n: string) => Number(s.capabilities?.find((c) => c.name === n)?.value)
        const os = cap('OSVhdSizeMB')
        return { id: s.name, cpus: cap('vCPUs'), memoryMB: Math.round(cap('MemoryGB') * 1024), diskGB: Number.isFinite(os) ? Math.round(os / 1024) : null, priceMonthly: null }
      })
  }

  private async vm(name: string, expand = false): Promise<Vm | null> {
    const r = await unless404(this.call<Vm>('GET', `${this.group}/providers/Microsoft.Compute/virtualMachines/${encodeURIComponent(name)}${expand ? '?$expand=instanceView' : ''}`, API.compute))
    return r && r.body
  }

  async findMachine({ requestId, name }: MachineRef): Promise<Machine | null> {
    const vm = await this.vm(name, true)
    return vm && vm.tags?.['muster-request'] === requestId ? this.machine(vm, true) : null
  }

  /** PUTs a network resource and waits (briefly) until Azure reports it provisioned; its body. */
  private async ensure<T extends { properties?: { provisioningState?: string } }>(path: string, body: unknown): Promise<{ id: string; body: T }> {
    const id = `${this.group}/providers/${path}`
    await this.call('PUT', id, API.network, body)
    for (let i = 0; i < 60; i++) {
      const { body: r } = await this.call<T>('GET', id, API.network)
      const state = r.properties?.provisioningState
      if (state === 'Succeeded') return { id, body: r }
      if (state === 'Failed') throw new MusterError('cloud-provider-error', `azure could not provision ${path}.`)
      await this.ctx.retry.sleep(1000)
    }
    throw new MusterError('cloud-provider-error', `azure did not finish provisioning ${path} within a minute.`, { retryable: true })
  }

  /** The VM's public IP, made before its first-boot data so that data can carry it. */
  private publicIp(name: string, location: string) {
    return this.ensure<{ properties?: { provisioningState?: string; ipAddress?: string } }>(`Microsoft.Network/publicIPAddresses/${name}-ip`, {
      location,
      sku: { name: 'Standard' },
      properties: { publicIPAllocationMethod: 'Static', deleteOption: 'Delete' },
    })
  }

  async reserveAddress(ref: MachineRef): Promise<string | null> {
    const ip = await this.publicIp(ref.name, ref.region)
    return ip.body.properties?.ipAddress ?? null
  }

  /** Per region and set of openings: deny everything inbound (the VNet too), then allow only what was asked. */
  private nsg(location: string, inbound: Inbound) {
    const rules = inboundRules(inbound).map((r, i) => ({
      name: r.port === 22 ? 'ssh' : 'muster-agent',
      properties: { priority: 100 + i, direction: 'Inbound', access: 'Allow', protocol: 'Tcp', sourceAddressPrefix: r.cidr, sourcePortRange: '*', destinationAddressPrefix: '*', destinationPortRange: String(r.port) },
    }))
    const denyAll = { name: 'deny-all-inbound', properties: { priority: 4096, direction: 'Inbound', access: 'Deny', protocol: '*', sourceAddressPrefix: '*', sourcePortRange: '*', destinationAddressPrefix: '*', destinationPortRange: '*' } }
    return this.ensure(`Microsoft.Network/networkSecurityGroups/muster-${location}-${inboundKey(inbound)}`, { location, properties: { securityRules: [...rules, denyAll] } })
  }

  async createMachine(req: CreateMachine): Promise<Machine> {
    const existing = await this.vm(req.name, true)
    if (existing) {
      if (existing.tags?.['muster-request'] === req.requestId) return this.machine(existing, true)
      throw new MusterError('cloud-provider-error', `azure already has a VM named ${req.name} in ${this.creds.resourceGroup} that muster did not create for this request.`, { providerStatus: 409 })
    }
    const location = req.region
    const nsg = await this.nsg(location, req.inbound)
    const vnet = await this.ensure(`Microsoft.Network/virtualNetworks/muster-vnet-${location}`, {
      location,
      properties: { addressSpace: { addressPrefixes: ['10.73.0.0/16'] }, subnets: [{ name: 'muster', properties: { addressPrefix: '10.73.0.0/20' } }] },
    })
    const ip = await this.publicIp(req.name, location)
    const nic = await this.ensure(`Microsoft.Network/networkInterfaces/${req.name}-nic`, {
      location,
      properties: { networkSecurityGroup: { id: nsg.id }, ipConfigurations: [{ name: 'ipconfig1', properties: { subnet: { id: `${vnet.id}/subnets/muster` }, publicIPAddress: { id: ip.id } } }] },
    })
    const { body } = await this.call<Vm>('PUT', `${this.group}/providers/Microsoft.Compute/virtualMachines/${encodeURIComponent(req.name)}`, API.compute, {
      location,
      tags: { 'managed-by': 'muster', 'muster-request': req.requestId, 'muster-role': req.role },
      properties: {
        hardwareProfile: { vmSize: req.size },
        storageProfile: {
          // Canonical's Ubuntu 24.04: `server` is the Gen2 x64 image, `server-arm64` the Arm one.
          imageReference: { publisher: 'Canonical', offer: 'ubuntu-24_04-lts', sku: this.ctx.arch === 'arm64' ? 'server-arm64' : 'server', version: 'latest' },
          osDisk: { createOption: 'FromImage', deleteOption: 'Delete', managedDisk: { storageAccountType: 'StandardSSD_LRS' } },
        },
        // Azure requires a login; nothing here uses one, so it is random and never kept.
        osProfile: { computerName: req.name, adminUsername: 'muster-admin', adminPassword: `Aa1!${randomSecret()}`, customData: Buffer.from(req.userData, 'utf8').toString('base64') },
        networkProfile: { networkInterfaces: [{ id: nic.id, properties: { primary: true, deleteOption: 'Delete' } }] },
      },
    })
    return this.machine(body, false)
  }

  async getMachine(id: string): Promise<Machine | null> {
    const vm = await this.vm(id, true)
    return vm ? this.machine(vm, true) : null
  }

  async deleteMachine(id: string): Promise<void> {
    await unless404(this.call('DELETE', `${this.group}/providers/Microsoft.Compute/virtualMachines/${encodeURIComponent(id)}`, API.compute))
  }

  private async machine(vm: Vm, withAddress: boolean): Promise<Machine> {
    const provisioning = vm.properties.provisioningState ?? 'Creating'
    const power = vm.properties.instanceView?.statuses?.find((s) => s.code.startsWith('PowerState/'))?.code.slice('PowerState/'.length)
    let status: MachineStatus = 'pending'
    if (provisioning === 'Failed') status = 'failed'
    else if (provisioning === 'Deleting') status = 'deleting'
    else if (power === 'running') status = 'running'
    else if (power === 'stopped' || power === 'deallocated' || power === 'stopping' || power === 'deallocating') status = 'stopped'
    let address: string | null = null
    if (withAddress) {
      const ip = await unless404(this.call<{ properties?: { ipAddress?: string } }>('GET', `${this.group}/providers/Microsoft.Network/publicIPAddresses/${encodeURIComponent(`${vm.name}-ip`)}`, API.network))
      address = ip?.body.properties?.ipAddress ?? null
    }
    return { id: vm.name, status, providerStatus: power ? `${provisioning}/${power}` : provisioning, address }
  }
}
