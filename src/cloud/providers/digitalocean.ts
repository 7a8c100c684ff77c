// DigitalOcean API v2 (https://docs.digitalocean.com/reference/api/): a
// personal access token as a bearer. Droplets carry the request id as a tag;
// DigitalOcean does not refuse a second droplet of the same name, so before
// any create muster looks for one by that tag and by name (a create whose
// answer was lost is adopted, never ordered twice), and POST /droplets is sent
// again only when DigitalOcean said 429. Shapes follow godo (droplets.go,
// firewalls.go).
import { callJson, isStatus, unless404 } from '../http.ts'
import { inboundKey, inboundRules, type CloudProvider, type CreateMachine, type Inbound, type MachineRef, type Machine, type MachineStatus, type ProviderContext, type Region, type Size, type TokenCredentials } from '../provider.ts'

interface Droplet {
  id: number
  name: string
  status: string
  tags?: string[]
  networks?: { v4?: { ip_address: string; type: string }[] }
}
interface Page {
  links?: { pages?: { next?: string } }
}

const STATUS: Record<string, MachineStatus> = { new: 'pending', active: 'running', off: 'stopped', archive: 'stopped' }

const describe = (b: unknown) => {
  const e = b as { id?: string; message?: string }
  return { code: e.id, message: e.message }
}

const requestTag = (requestId: string) => `muster-request:${requestId}`

export class DigitalOceanProvider implements CloudProvider {
  readonly name = 'digitalocean' as const
  readonly maxUserDataBytes = 64 * 1024

  constructor(
    private readonly creds: TokenCredentials,
    private readonly ctx: Pick<ProviderContext, 'retry' | 'arch'> & { base: string },
  ) {}

  private call<T>(method: string, path: string, body?: unknown) {
    return callJson<T>('digitalocean', `${this.ctx.base}${path}`, { method, headers: { authorization: `Bearer ${this.creds.token}` }, body: body === undefined ? undefined : JSON.stringify(body) }, describe, { policy: this.ctx.retry })
  }

  /** Every page of a list, counting pages ourselves (the page links are never followed off this API's origin). */
  private async all<T>(path: string, key: string): Promise<T[]> {
    const out: T[] = []
    for (let page: number | null = 1; page !== null; ) {
      const sep = path.includes('?') ? '&' : '?'
      const { body }: { body: Page & Record<string, T[]> } = await this.call<Page & Record<string, T[]>>('GET', `${path}${sep}page=${page}&per_page=200`)
      out.push(...(body[key] ?? []))
      page = body.links?.pages?.next ? page + 1 : null
    }
    return out
  }

  async validate() {
    await this.call('GET', '/droplets?per_page=1')
    return { account: null }
  }

  async regions(): Promise<Region[]> {
    const list = await this.all<{ slug: string; name: string; available: boolean }>('/regions', 'regions')
    return list.map((r) => ({ id: r.slug, name: r.name, available: r.available }))
  }

  /** Droplets are x86-64 only: an arm64 binary has no size here. */
  async sizes(region?: string): Promise<Size[]> {
    if (this.ctx.arch !== 'x86_64') return []
    const list = await this.all<{ slug: string; vcpus: number; memory: number; disk: number; price_monthly: number; available: boolean; regions: string[] }>('/sizes', 'sizes')
    return list
      .filter((s) => s.available && (!region || s.regions.includes(region)))
      .map((s) => ({ id: s.slug, cpus: s.vcpus, memoryMB: s.memory, diskGB: s.disk, priceMonthly: s.price_monthly }))
  }

  /** The droplet of this request: by its tag, or by its name carrying the tag. */
  async findMachine({ requestId, name }: MachineRef): Promise<Machine | null> {
    const tag = requestTag(requestId)
    const tagged = (await this.call<{ droplets: Droplet[] }>('GET', `/droplets?tag_name=${encodeURIComponent(tag)}`)).body.droplets.find((d) => d.tags?.includes(tag))
    if (tagged) return machine(tagged)
    const named = (await this.call<{ droplets: Droplet[] }>('GET', `/droplets?name=${encodeURIComponent(name)}`)).body.droplets.find((d) => d.name === name && d.tags?.includes(tag))
    return named ? machine(named) : null
  }

  async createMachine(req: CreateMachine): Promise<Machine> {
    const existing = await this.findMachine(req)
    if (existing) return existing
    const firewallTag = await this.firewall(req.inbound)
    const { body } = await this.call<{ droplet: Droplet }>('POST', '/droplets', {
      name: req.name,
      region: req.region,
      size: req.size,
      image: 'ubuntu-24-04-x64',
      user_data: req.userData,
      tags: ['muster', requestTag(req.requestId), `muster-role:${req.role}`, ...(firewallTag ? [firewallTag] : [])],
    })
    return machine(body.droplet)
  }

  /**
   * No firewall when nothing is let in (the machine closes its own ports at
   * first boot). Openings get a cloud firewall admitting only those sources,
   * applied by a tag the droplet carries from its create on.
   */
  private async firewall(inbound: Inbound): Promise<string | null> {
    const rules = inboundRules(inbound)
    if (rules.length === 0) return null
    const name = `muster-${inboundKey(inbound)}`
    const existing = await this.all<{ id: string; name: string }>('/firewalls', 'firewalls')
    if (!existing.some((f) => f.name === name)) {
      // "Tag names must exist in order to be referenced in a request" (API reference, Firewalls); creating an existing tag is harmless.
      await this.call('POST', '/tags', { name }).catch((e: unknown) => {
        if (!isStatus(e, 422)) throw e
      })
      const anywhere = { addresses: ['0.0.0.0/0', '::/0'] }
      await this.call('POST', '/firewalls', {
        name,
        inbound_rules: rules.map((r) => ({ protocol: 'tcp', ports: String(r.port), sources: { addresses: [r.cidr] } })),
        outbound_rules: [
          { protocol: 'tcp', ports: 'all', destinations: anywhere },
          { protocol: 'udp', ports: 'all', destinations: anywhere },
          { protocol: 'icmp', destinations: anywhere },
        ],
        tags: [name],
      })
    }
    return name
  }

  async getMachine(id: string): Promise<Machine | null> {
    if (!/^\d+$/.test(id)) return null
    const r = await unless404(this.call<{ droplet: Droplet }>('GET', `/droplets/${id}`))
    return r && machine(r.body.droplet)
  }

  async deleteMachine(id: string): Promise<void> {
    if (!/^\d+$/.test(id)) return
    await unless404(this.call('DELETE', `/droplets/${id}`))
  }
}

function machine(d: Droplet): Machine {
  const ip = d.networks?.v4?.find((n) => n.type === 'public')?.ip_address ?? null
  return { id: String(d.id), status: STATUS[d.status] ?? 'pending', providerStatus: d.status, address: ip }
}
