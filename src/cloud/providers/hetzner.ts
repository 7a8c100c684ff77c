// Hetzner Cloud API v1 (https://docs.hetzner.cloud): one project token as a
// bearer. Servers carry the request id as a label, so a retried create finds
// the server the first attempt made instead of ordering a second one.
import { callJson, unless404 } from '../http.ts'
import type { CloudProvider, CreateMachine, MachineRef, Machine, MachineStatus, Region, Size, TokenCredentials } from '../provider.ts'

interface HServer {
  id: number
  name: string
  status: string
  public_net?: { ipv4?: { ip?: string } | null }
}
interface Page {
  meta?: { pagination?: { next_page: number | null } }
}

const STATUS: Record<string, MachineStatus> = {
  initializing: 'pending',
  starting: 'pending',
  running: 'running',
  stopping: 'stopped',
  off: 'stopped',
  deleting: 'deleting',
  migrating: 'running',
  rebuilding: 'pending',
}

const describe = (b: unknown) => {
  const e = (b as { error?: { code?: string; message?: string } }).error
  return { code: e?.code, message: e?.message }
}

export class HetznerProvider implements CloudProvider {
  readonly name = 'hetzner' as const
  readonly maxUserDataBytes = 32 * 1024

  constructor(
    private readonly creds: TokenCredentials,
    private readonly base: string,
  ) {}

  private call<T>(method: string, path: string, body?: unknown) {
    return callJson<T>('hetzner', `${this.base}${path}`, { method, headers: { authorization: `Bearer ${this.creds.token}` }, body: body === undefined ? undefined : JSON.stringify(body) }, describe)
  }

  /** Every page of a list (Hetzner pages at most 50 per request). */
  private async all<T>(path: string, key: string): Promise<T[]> {
    const out: T[] = []
    for (let page: number | null = 1; page !== null; ) {
      const sep = path.includes('?') ? '&' : '?'
      const { body }: { body: Page & Record<string, T[]> } = await this.call<Page & Record<string, T[]>>('GET', `${path}${sep}page=${page}&per_page=50`)
      out.push(...(body[key] ?? []))
      page = body.meta?.pagination?.next_page ?? null
    }
    return out
  }

  async validate() {
    await this.call('GET', '/servers?per_page=1')
    return { account: null }
  }

  async regions(): Promise<Region[]> {
    const list = await this.all<{ name: string; description: string; city: string }>('/locations', 'locations')
    return list.map((l) => ({ id: l.name, name: `${l.description} (${l.city})`, available: true }))
  }

  async sizes(region?: string): Promise<Size[]> {
    const list = await this.all<{ name: string; cores: number; memory: number; disk: number; deprecated?: boolean | null; prices: { location: string; price_monthly: { gross: string } }[] }>('/server_types', 'server_types')
    return list
      .filter((t) => !t.deprecated && (!region || t.prices.some((p) => p.location === region)))
      .map((t) => {
        const price = t.prices.find((p) => p.location === region) ?? t.prices[0]
        return { id: t.name, cpus: t.cores, memoryMB: Math.round(t.memory * 1024), diskGB: t.disk, priceMonthly: price ? Number(price.price_monthly.gross) : null }
      })
  }

  async findMachine({ requestId }: MachineRef): Promise<Machine | null> {
    const found = await this.call<{ servers: HServer[] }>('GET', `/servers?label_selector=${encodeURIComponent(`muster-request=${requestId}`)}`)
    const s = found.body.servers[0]
    return s ? machine(s) : null
  }

  async createMachine(req: CreateMachine): Promise<Machine> {
    const existing = await this.findMachine(req)
    if (existing) return existing
    const { body } = await this.call<{ server: HServer }>('POST', '/servers', {
      name: req.name,
      server_type: req.size,
      location: req.region,
      image: 'ubuntu-24.04',
      user_data: req.userData,
      start_after_create: true,
      labels: { 'managed-by': 'muster', 'muster-request': req.requestId, 'muster-role': req.role },
    })
    return machine(body.server)
  }

  async getMachine(id: string): Promise<Machine | null> {
    if (!/^\d+$/.test(id)) return null
    const r = await unless404(this.call<{ server: HServer }>('GET', `/servers/${id}`))
    return r && machine(r.body.server)
  }

  async deleteMachine(id: string): Promise<void> {
    if (!/^\d+$/.test(id)) return
    await unless404(this.call('DELETE', `/servers/${id}`))
  }
}

function machine(s: HServer): Machine {
  return { id: String(s.id), status: STATUS[s.status] ?? 'pending', providerStatus: s.status, address: s.public_net?.ipv4?.ip ?? null }
}
