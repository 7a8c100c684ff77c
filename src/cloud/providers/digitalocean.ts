// DigitalOcean API v2 (https://docs.digitalocean.com/reference/api/): a
// personal access token as a bearer. Droplets carry the request id as a tag,
// so a retried create finds the droplet the first attempt made.
import { callJson, unless404 } from '../http.ts'
import type { CloudProvider, CreateMachine, MachineRef, Machine, MachineStatus, Region, Size, TokenCredentials } from '../provider.ts'

interface Droplet {
  id: number
  name: string
  status: string
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

export class DigitalOceanProvider implements CloudProvider {
  readonly name = 'digitalocean' as const
  readonly maxUserDataBytes = 64 * 1024

  constructor(
    private readonly creds: TokenCredentials,
    private readonly base: string,
  ) {}

  private call<T>(method: string, path: string, body?: unknown) {
    return callJson<T>('digitalocean', `${this.base}${path}`, { method, headers: { authorization: `Bearer ${this.creds.token}` }, body: body === undefined ? undefined : JSON.stringify(body) }, describe)
  }

  /** Every page of a list, following the page links but only on this API's own origin. */
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

  async sizes(region?: string): Promise<Size[]> {
    const list = await this.all<{ slug: string; vcpus: number; memory: number; disk: number; price_monthly: number; available: boolean; regions: string[] }>('/sizes', 'sizes')
    return list
      .filter((s) => s.available && (!region || s.regions.includes(region)))
      .map((s) => ({ id: s.slug, cpus: s.vcpus, memoryMB: s.memory, diskGB: s.disk, priceMonthly: s.price_monthly }))
  }

  async findMachine({ requestId }: MachineRef): Promise<Machine | null> {
    const found = await this.call<{ droplets: Droplet[] }>('GET', `/droplets?tag_name=${encodeURIComponent(`muster-request:${requestId}`)}`)
    const d = found.body.droplets[0]
    return d ? machine(d) : null
  }

  async createMachine(req: CreateMachine): Promise<Machine> {
    const tag = `muster-request:${req.requestId}`
    const existing = await this.findMachine(req)
    if (existing) return existing
    const { body } = await this.call<{ droplet: Droplet }>('POST', '/droplets', {
      name: req.name,
      region: req.region,
      size: req.size,
      image: 'ubuntu-24-04-x64',
      user_data: req.userData,
      tags: ['muster', tag, `muster-role:${req.role}`],
    })
    return machine(body.droplet)
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
