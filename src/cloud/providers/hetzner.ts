// Hetzner Cloud API v1 (https://docs.hetzner.cloud): one project token as a
// bearer. Servers carry the request id as a label, so a retried create finds
// the server the first attempt made instead of ordering a second one; a create
// answered 409 `uniqueness_error` adopts the same-named server when its labels
// carry this request id. Every server gets a firewall at its create (POST
// /servers `firewalls`), so nothing reaches it before first boot closes SSH:
// `muster-closed` has no inbound rule (a Hetzner firewall drops all inbound it
// does not allow, and with no outbound rule allows all outbound); openings get
// their own. A firewall found by name is read and its rules set back when they
// drifted (POST /firewalls/{id}/actions/set_rules). Schemas follow hcloud-go
// (hcloud/schema/*.go).
import { MusterError } from '../../errors.ts'
import { callJson, isCode, unless404 } from '../http.ts'
import { inboundKey, inboundRules, type CloudProvider, type CreateMachine, type Inbound, type MachineRef, type Machine, type MachineStatus, type ProviderContext, type TokenCredentials } from '../provider.ts'
import type { Region, Size } from '../../wire/cloud.ts'

interface HServer {
  id: number
  name: string
  status: string
  labels?: Record<string, string>
  public_net?: { ipv4?: { ip?: string } | null }
}
/** schema.FirewallRule: direction in|out, protocol tcp|udp|icmp|esp|gre, port "22" or "80-85", source_ips / destination_ips CIDRs. */
interface HRule {
  direction: string
  protocol: string
  port?: string | null
  source_ips?: string[]
  destination_ips?: string[]
  description?: string | null
}
interface HFirewall {
  id: number
  name: string
  rules?: HRule[]
}

/** Rules compared by what they let through (descriptions aside). */
const ruleKeys = (rules: HRule[]) =>
  rules
    .map((r) => [r.direction, r.protocol, r.port ?? '', [...(r.source_ips ?? [])].sort().join(','), [...(r.destination_ips ?? [])].sort().join(',')].join(' '))
    .sort()
    .join('\n')

interface Page {
  meta?: { pagination?: { next_page: number | null } }
}
interface Deprecation {
  announced: string
  unavailable_after: string
}
/** schema.ServerType: `deprecated` is being phased out (from 2025-09-24) for per-location `locations[].deprecation`. */
interface HServerType {
  name: string
  cores: number
  memory: number
  disk: number
  architecture?: 'x86' | 'arm'
  deprecated?: boolean | null
  deprecation?: Deprecation | null
  prices: { location: string; price_monthly: { gross: string } }[]
  locations?: { name: string; available?: boolean; deprecation?: Deprecation | null }[]
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
    private readonly ctx: Pick<ProviderContext, 'retry' | 'arch'> & { base: string },
  ) {}

  private call<T>(method: string, path: string, body?: unknown) {
    return callJson<T>('hetzner', `${this.ctx.base}${path}`, { method, headers: { authorization: `Bearer ${this.creds.token}` }, body: body === undefined ? undefined : JSON.stringify(body) }, describe, { policy: this.ctx.retry })
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

  /** Only the binary's architecture (x86 never gets `cax*`), and only types offered and not deprecated where asked. */
  async sizes(region?: string): Promise<Size[]> {
    const arch = this.ctx.arch === 'arm64' ? 'arm' : 'x86'
    const list = await this.all<HServerType>('/server_types', 'server_types')
    return list
      .filter((t) => (t.architecture ?? 'x86') === arch && offered(t, region))
      .map((t) => {
        const price = t.prices.find((p) => p.location === region) ?? (region ? undefined : t.prices[0])
        return { id: t.name, cpus: t.cores, memoryMB: Math.round(t.memory * 1024), diskGB: t.disk, priceMonthly: price ? Number(price.price_monthly.gross) : null, currency: price ? 'EUR' : null }
      })
  }

  private async byLabel(requestId: string): Promise<HServer | null> {
    const found = await this.call<{ servers: HServer[] }>('GET', `/servers?label_selector=${encodeURIComponent(`muster-request=${requestId}`)}`)
    // The selector already filters; the label is checked again so nothing else is ever taken for ours.
    return found.body.servers.find((s) => s.labels?.['muster-request'] === requestId) ?? null
  }

  async findMachine({ requestId }: MachineRef): Promise<Machine | null> {
    const s = await this.byLabel(requestId)
    return s ? machine(s) : null
  }

  async createMachine(req: CreateMachine): Promise<Machine> {
    const existing = await this.byLabel(req.requestId)
    if (existing) return machine(existing)
    const firewall = await this.firewall(req.inbound)
    try {
      // POST is not idempotent: sent again only when Hetzner throttled it; a lost answer is resolved by name below.
      const { body } = await this.call<{ server: HServer }>('POST', '/servers', {
        name: req.name,
        server_type: req.size,
        location: req.region,
        image: 'ubuntu-24.04',
        user_data: req.userData,
        start_after_create: true,
        labels: { 'managed-by': 'muster', 'muster-request': req.requestId, 'muster-role': req.role },
        firewalls: [{ firewall }],
      })
      return machine(body.server)
    } catch (e) {
      if (!isCode(e, 'uniqueness_error')) throw e
      // The name is taken: ours when an earlier attempt made it (its answer was lost), else someone else's.
      const { body } = await this.call<{ servers: HServer[] }>('GET', `/servers?name=${encodeURIComponent(req.name)}`)
      const same = body.servers.find((s) => s.name === req.name)
      if (same?.labels?.['muster-request'] === req.requestId) return machine(same)
      if (!same) throw new MusterError('cloud-provider-error', `hetzner says the name ${req.name} is taken, but lists no server by that name yet; will look again.`, { providerStatus: 409, providerCode: 'uniqueness_error', retryable: true })
      throw new MusterError('cloud-provider-error', `hetzner already has a server named ${req.name} that muster did not create for this request; pick another name.`, { providerStatus: 409, providerCode: 'uniqueness_error' })
    }
  }

  /**
   * The firewall for these openings (`muster-closed`: none), applied at the
   * create: found by name and its rules compared with what they should be
   * (set again when they drifted), else created (a create that races another
   * answers uniqueness_error).
   */
  private async firewall(inbound: Inbound): Promise<number> {
    const name = `muster-${inboundKey(inbound)}`
    const rules: HRule[] = inboundRules(inbound).map((r) => ({ direction: 'in', protocol: 'tcp', port: String(r.port), source_ips: [r.cidr], description: r.port === 22 ? 'ssh (muster --allow-ssh-inbound)' : 'muster Agent, from the Platform only' }))
    const find = async () => (await this.call<{ firewalls: HFirewall[] }>('GET', `/firewalls?name=${encodeURIComponent(name)}`)).body.firewalls.find((f) => f.name === name) ?? null
    let found = await find()
    if (!found) {
      try {
        const { body } = await this.call<{ firewall: HFirewall }>('POST', '/firewalls', { name, labels: { 'managed-by': 'muster' }, rules })
        return body.firewall.id
      } catch (e) {
        if (!isCode(e, 'uniqueness_error')) throw e
        found = await find()
        if (!found) throw e
      }
    }
    if (ruleKeys(found.rules ?? []) !== ruleKeys(rules)) {
      // someone opened it (or closed an opening): its rules are set back, all at once
      await this.call('POST', `/firewalls/${found.id}/actions/set_rules`, { rules })
    }
    return found.id
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

/** Not deprecated as a whole (`deprecated`, or a type-level `deprecation`), and offered and not deprecated in the region. */
function offered(t: HServerType, region: string | undefined): boolean {
  if (t.deprecated || t.deprecation) return false
  if (t.locations) {
    const here = region ? t.locations.filter((l) => l.name === region) : t.locations
    return here.some((l) => l.available !== false && !l.deprecation)
  }
  return !region || t.prices.some((p) => p.location === region)
}

function machine(s: HServer): Machine {
  return { id: String(s.id), status: STATUS[s.status] ?? 'pending', providerStatus: s.status, address: s.public_net?.ipv4?.ip ?? null }
}
