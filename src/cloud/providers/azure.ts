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
// Shared resources are made so that provisions running at once do not undo
// each other: the VNet is PUT only when it does not exist, its subnet is its
// own resource (a VNet PUT replaces the subnet list), and the NSG is PUT only
// when its rules differ from what they should be (drift is repaired). ARM's
// 409 AnotherOperationInProgress and 429 RetryableError ask to come back and
// are sent again (retry.ts). Every list follows nextLink (on ARM's origin
// only: the bearer token goes nowhere else). A VM delete is asynchronous: it
// is waited for, and a NIC or public IP still there afterwards is deleted by name.
import { MusterError } from '../../errors.ts'
import { randomSecret } from '../../crypto/tokens.ts'
import { callJson, unless404 } from '../http.ts'
import { backoffMs } from '../retry.ts'
import { inboundKey, inboundRules, type AzureCredentials, type CloudProvider, type CreateMachine, type Inbound, type Machine, type MachineRef, type MachineStatus, type ProviderContext } from '../provider.ts'
import { AzureToken } from './azure-auth.ts'
import type { Region, Size } from '../../wire/cloud.ts'

/** api-versions each resource type publishes (azure-rest-api-specs, stable). */
export const API = { compute: '2024-07-01', network: '2024-05-01', resources: '2022-12-01', skus: '2021-07-01' } as const

interface Vm {
  name: string
  tags?: Record<string, string>
  properties: { vmId?: string; provisioningState?: string; instanceView?: { statuses?: { code: string; message?: string }[] } }
}
interface Rule {
  name: string
  properties: Record<string, unknown>
}

/** How long a release waits for Azure to finish deleting a VM (and then its NIC) before it says to try again. */
const DELETE_WAIT_MS = 5 * 60_000
/** Microsoft.Compute/skus (2021-07-01): capabilities as name/value strings, restrictions per location. */
interface Sku {
  resourceType: string
  name: string
  locations?: string[]
  capabilities?: { name: string; value: string }[]
  restrictions?: { type: string; values?: string[]; reasonCode?: string }[]
}

/** Security rules compared by what they let through (names and etags aside). */
const rulesKey = (rules: Rule[]) =>
  rules
    .map((r) => {
      const p = r.properties
      return ['priority', 'direction', 'access', 'protocol', 'sourceAddressPrefix', 'sourcePortRange', 'destinationAddressPrefix', 'destinationPortRange'].map((k) => String(p[k] ?? '')).join(' ')
    })
    .sort()
    .join('\n')

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
    return this.send<T>(method, `${this.ctx.arm}${path}${sep}api-version=${apiVersion}`, body)
  }

  private async send<T>(method: string, url: string, body?: unknown) {
    const headers = { authorization: `Bearer ${await this.token.get()}` }
    return callJson<T>('azure', url, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) }, describe, { policy: this.ctx.retry })
  }

  /** Every page of an ARM list: `nextLink` is followed while it points at ARM itself (the bearer token goes nowhere else). */
  private async all<T>(path: string, apiVersion: string): Promise<T[]> {
    const out: T[] = []
    const origin = new URL(this.ctx.arm).origin
    let { body } = await this.call<{ value?: T[]; nextLink?: string | null }>('GET', path, apiVersion)
    for (let pages = 1; ; pages++) {
      out.push(...(body.value ?? []))
      if (!body.nextLink) return out
      if (new URL(body.nextLink).origin !== origin) throw new MusterError('cloud-provider-error', `azure answered a nextLink off ${origin}; not followed.`)
      if (pages >= 1000) throw new MusterError('cloud-provider-error', 'azure answered more than 1000 pages; not followed further.')
      body = (await this.send<{ value?: T[]; nextLink?: string | null }>('GET', body.nextLink)).body
    }
  }

  private get sub(): string {
    return `/subscriptions/${this.creds.subscriptionId}`
  }
  private get group(): string {
    return `${this.sub}/resourceGroups/${encodeURIComponent(this.creds.resourceGroup)}`
  }

  identityAccount(): string {
    return this.creds.subscriptionId.toLowerCase()
  }

  async validate() {
    await this.call('GET', `${this.group}/providers/Microsoft.Compute/virtualMachines`, API.compute)
    return { account: `${this.creds.subscriptionId}/${this.creds.resourceGroup}` }
  }

  async regions(): Promise<Region[]> {
    const locations = await this.all<{ name: string; displayName: string; metadata?: { regionType?: string } }>(`${this.sub}/locations`, API.resources)
    return locations.filter((l) => l.metadata?.regionType !== 'Logical').map((l) => ({ id: l.name, name: l.displayName, available: true }))
  }

  /**
   * From the resource SKUs (they say what vmSizes does not): only VM sizes the
   * `server` image can boot — Hyper-V generation 2, the binary's CPU
   * architecture — and not restricted for this subscription in the region.
   */
  async sizes(region?: string): Promise<Size[]> {
    if (!region) throw new MusterError('invalid-request', 'azure lists sizes per region: give a region (--region).', { field: 'region' })
    const filter = encodeURIComponent(`location eq '${region}'`)
    const skus = await this.all<Sku>(`${this.sub}/providers/Microsoft.Compute/skus?$filter=${filter}`, API.skus)
    const arch = this.ctx.arch === 'arm64' ? 'arm64' : 'x64'
    const here = (xs: string[] | undefined) => (xs ?? []).some((x) => x.toLowerCase() === region.toLowerCase())
    return skus
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
        return { id: s.name, cpus: cap('vCPUs'), memoryMB: Math.round(cap('MemoryGB') * 1024), diskGB: Number.isFinite(os) ? Math.round(os / 1024) : null, priceMonthly: null, currency: null }
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
    return this.settled<T>(path)
  }

  /** A network resource once Azure reports it provisioned. */
  private async settled<T extends { properties?: { provisioningState?: string } }>(path: string): Promise<{ id: string; body: T }> {
    const id = `${this.group}/providers/${path}`
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

  /** An existing resource as it is, else PUT once (never a PUT over one that exists: it would replace what others added). */
  private async made<T extends { properties?: { provisioningState?: string } }>(path: string, body: unknown): Promise<{ id: string; body: T }> {
    const id = `${this.group}/providers/${path}`
    const found = await unless404(this.call<T>('GET', id, API.network))
    return found ? { id, body: found.body } : this.ensure<T>(path, body)
  }

  /**
   * Per region and set of openings: deny everything inbound (the VNet too), then allow only what was
   * asked. Read first: PUT (which replaces every rule) only when missing or drifted.
   */
  private async nsg(location: string, inbound: Inbound) {
    const rules: Rule[] = inboundRules(inbound).map((r, i) => ({
      name: r.port === 22 ? 'ssh' : 'muster-agent',
      properties: { priority: 100 + i, direction: 'Inbound', access: 'Allow', protocol: 'Tcp', sourceAddressPrefix: r.cidr, sourcePortRange: '*', destinationAddressPrefix: '*', destinationPortRange: String(r.port) },
    }))
    const denyAll: Rule = { name: 'deny-all-inbound', properties: { priority: 4096, direction: 'Inbound', access: 'Deny', protocol: '*', sourceAddressPrefix: '*', sourcePortRange: '*', destinationAddressPrefix: '*', destinationPortRange: '*' } }
    const want = [...rules, denyAll]
    const path = `Microsoft.Network/networkSecurityGroups/muster-${location}-${inboundKey(inbound)}`
    const found = await unless404(this.call<{ properties?: { securityRules?: Rule[] } }>('GET', `${this.group}/providers/${path}`, API.network))
    if (found && rulesKey(found.body.properties?.securityRules ?? []) === rulesKey(want)) return { id: `${this.group}/providers/${path}` }
    return this.ensure(path, { location, properties: { securityRules: want } })
  }

  /** The region's VNet (made once, never PUT again) and muster's subnet in it, as a resource of its own. */
  private async subnet(location: string): Promise<string> {
    const vnet = `Microsoft.Network/virtualNetworks/muster-vnet-${location}`
    const subnet = { name: 'muster', properties: { addressPrefix: '10.73.0.0/20' } }
    await this.made(vnet, { location, properties: { addressSpace: { addressPrefixes: ['10.73.0.0/16'] }, subnets: [subnet] } })
    return (await this.made(`${vnet}/subnets/muster`, { properties: subnet.properties })).id
  }

  async createMachine(req: CreateMachine): Promise<Machine> {
    const existing = await this.vm(req.name, true)
    if (existing) {
      if (existing.tags?.['muster-request'] === req.requestId) return this.machine(existing, true)
      throw new MusterError('cloud-provider-error', `azure already has a VM named ${req.name} in ${this.creds.resourceGroup} that muster did not create for this request.`, { providerStatus: 409 })
    }
    const location = req.region
    const nsg = await this.nsg(location, req.inbound)
    const subnet = await this.subnet(location)
    const ip = await this.publicIp(req.name, location)
    const nic = await this.ensure(`Microsoft.Network/networkInterfaces/${req.name}-nic`, {
      location,
      properties: { networkSecurityGroup: { id: nsg.id }, ipConfigurations: [{ name: 'ipconfig1', properties: { subnet: { id: subnet }, publicIPAddress: { id: ip.id } } }] },
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
    const m = await this.machine(body, false)
    // failed at once: the instance view says why (ProvisioningState/failed/CODE and its message)
    if (m.status !== 'failed') return m
    const seen = await this.vm(req.name, true)
    return seen ? this.machine(seen, false) : m
  }

  async getMachine(id: string): Promise<Machine | null> {
    const vm = await this.vm(id, true)
    return vm ? this.machine(vm, true) : null
  }

  /**
   * DELETE answers 202 and Azure goes on deleting: the VM is waited for until it is gone, then its NIC
   * and public IP are checked, and deleted by name if they are still there (the NIC first: an IP a NIC
   * holds cannot be deleted).
   */
  async deleteMachine(id: string): Promise<void> {
    const deadline = Date.now() + DELETE_WAIT_MS
    const vm = `${this.group}/providers/Microsoft.Compute/virtualMachines/${encodeURIComponent(id)}`
    await unless404(this.call('DELETE', vm, API.compute))
    await this.gone(vm, API.compute, deadline, `VM ${id}`)
    for (const path of [`Microsoft.Network/networkInterfaces/${id}-nic`, `Microsoft.Network/publicIPAddresses/${id}-ip`]) {
      const left = `${this.group}/providers/${path}`
      if (!(await unless404(this.call('GET', left, API.network)))) continue
      await unless404(this.call('DELETE', left, API.network))
      await this.gone(left, API.network, deadline, path)
    }
  }

  /** Waits until a GET answers 404. */
  private async gone(path: string, apiVersion: string, deadline: number, what: string): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      if (!(await unless404(this.call('GET', path, apiVersion)))) return
      if (Date.now() > deadline) throw new MusterError('cloud-provider-error', `azure is still deleting ${what}; release again in a few minutes.`, { retryable: true })
      await this.ctx.retry.sleep(backoffMs(this.ctx.retry, Math.min(attempt, 6)))
    }
  }

  private async machine(vm: Vm, withAddress: boolean): Promise<Machine> {
    const provisioning = vm.properties.provisioningState ?? 'Creating'
    const statuses = vm.properties.instanceView?.statuses ?? []
    const power = statuses.find((s) => s.code.startsWith('PowerState/'))?.code.slice('PowerState/'.length)
    // "ProvisioningState/failed/AllocationFailed" with its message: the reason a create failed
    const failed = statuses.find((s) => s.code.toLowerCase().startsWith('provisioningstate/failed'))
    const reason = failed ? [failed.code.split('/')[2], failed.message].filter(Boolean).join(': ') || failed.code : null
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
    return { id: vm.name, status, providerStatus: power ? `${provisioning}/${power}` : provisioning, address, reason: status === 'failed' ? reason : null, attestedId: vm.properties.vmId?.toLowerCase() ?? null }
  }
}
