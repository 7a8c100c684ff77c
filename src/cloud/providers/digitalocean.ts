// DigitalOcean API v2 (https://docs.digitalocean.com/reference/api/): a
// personal access token as a bearer. Droplets carry the request id as a tag;
// DigitalOcean does not refuse a second droplet of the same name, so before
// any create muster looks for one by that tag and by name (a create whose
// answer was lost is adopted, never ordered twice), and POST /droplets is sent
// again only when DigitalOcean said 429. Every droplet carries from its create
// the tag of a cloud firewall, so nothing reaches it before first boot closes
// SSH: `muster-closed` allows no inbound (a cloud firewall drops what its
// inbound rules do not allow) and all outbound; openings get their own. A
// firewall found by name is read and put back (PUT /v2/firewalls/{id}) when
// its rules or tags drifted. Shapes follow godo (droplets.go, firewalls.go).
import { callJson, isStatus, unless404 } from '../http.ts'
import { inboundKey, inboundRules, type CloudProvider, type CreateMachine, type Inbound, type MachineRef, type Machine, type MachineStatus, type ProviderContext, type TokenCredentials } from '../provider.ts'
import type { Region, Size } from '../../wire/cloud.ts'

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

/** godo Firewall: rules as protocol, ports ("22", "8000-9000", "all"; "0" means all for icmp), sources/destinations. */
interface DoRule {
  protocol: string
  ports?: string
  sources?: { addresses?: string[]; tags?: string[]; droplet_ids?: number[]; load_balancer_uids?: string[] }
  destinations?: DoRule['sources']
}
interface DoFirewall {
  id: string
  name: string
  inbound_rules?: DoRule[] | null
  outbound_rules?: DoRule[] | null
  tags?: string[] | null
  droplet_ids?: number[] | null
}

/** Rules compared by what they let through: protocol, ports (icmp has none), every source and destination. */
const rulesKey = (rules: DoRule[] | null | undefined) =>
  (rules ?? [])
    .map((r) => {
      const ends = (e: DoRule['sources']) => [...(e?.addresses ?? []), ...(e?.tags ?? []).map((t) => `tag:${t}`), ...(e?.droplet_ids ?? []).map((d) => `droplet:${d}`), ...(e?.load_balancer_uids ?? []).map((l) => `lb:${l}`)].sort().join(',')
      const ports = r.protocol === 'icmp' ? '' : r.ports === '0' ? 'all' : (r.ports ?? 'all')
      return `${r.protocol} ${ports} ${ends(r.sources)} ${ends(r.destinations)}`
    })
    .sort()
    .join('\n')

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
      .map((s) => ({ id: s.slug, cpus: s.vcpus, memoryMB: s.memory, diskGB: s.disk, priceMonthly: s.price_monthly, currency: 'USD' }))
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
      tags: ['muster', requestTag(req.requestId), `muster-role:${req.role}`, firewallTag],
    })
    return machine(body.droplet)
  }

  /**
   * The cloud firewall for these openings (`muster-closed`: no inbound rule),
   * applied by a tag the droplet carries from its create on: found by name and
   * compared with what it should be (its inbound and outbound rules, and its
   * tag), put back when it drifted; else created.
   */
  private async firewall(inbound: Inbound): Promise<string> {
    const name = `muster-${inboundKey(inbound)}`
    const anywhere = { addresses: ['0.0.0.0/0', '::/0'] }
    const want = {
      name,
      inbound_rules: inboundRules(inbound).map((r) => ({ protocol: 'tcp', ports: String(r.port), sources: { addresses: [r.cidr] } })),
      outbound_rules: [
        { protocol: 'tcp', ports: 'all', destinations: anywhere },
        { protocol: 'udp', ports: 'all', destinations: anywhere },
        { protocol: 'icmp', ports: '0', destinations: anywhere },
      ],
      tags: [name],
    }
    const found = (await this.all<DoFirewall>('/firewalls', 'firewalls')).find((f) => f.name === name)
    // "Tag names must exist in order to be referenced in a request" (API reference, Firewalls); creating an existing tag is harmless.
    await this.call('POST', '/tags', { name }).catch((e: unknown) => {
      if (!isStatus(e, 422)) throw e
    })
    if (!found) await this.call('POST', '/firewalls', want)
    else if (rulesKey(found.inbound_rules) !== rulesKey(want.inbound_rules) || rulesKey(found.outbound_rules) !== rulesKey(want.outbound_rules) || !(found.tags ?? []).includes(name)) {
      // someone opened it (or untagged it): put back, keeping droplets it names by id
      await this.call('PUT', `/firewalls/${encodeURIComponent(found.id)}`, { ...want, droplet_ids: found.droplet_ids ?? [] })
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
