// GCP Compute Engine v1 (https://cloud.google.com/compute/docs/reference/rest/v1)
// with a service account key: a JWT signed with its private key (RS256) is
// exchanged for an OAuth access token. The project is the key's project_id;
// "regions" are zones, where instances live. Inserts carry a requestId (a UUID
// derived from ours) so Compute Engine itself drops a repeated insert (the
// same request body each time: the first-boot data is made once); the insert's
// zone Operation is polled and its error is the provision's reason. Instances
// are tagged `muster`, which a deny-all ingress rule covers; openings are allow
// rules at a higher priority for a per-ruleset tag. Each rule is read on every
// create and repaired when it is missing, disabled or edited (firewalls.update),
// and its insert or update Operation is polled to DONE (its error is the
// refusal). The default network's `default-allow-ssh` (and the other
// default-allow-* rules) are left alone on purpose — other machines in the
// project may rely on them — and do not reach muster's machines: they run at
// priority 65534, muster-deny-inbound at 1000, and the lower number wins.
// Boot disks are pd-balanced, or hyperdisk-balanced for the families that take
// only Hyperdisk (N4, C4, C4A, …); the default pd-standard is refused by those
// and by C3/C3D. Machine ids are ZONE/NAME.
import { createHash } from 'node:crypto'
import { MusterError } from '../../errors.ts'
import { callJson, isStatus, send, unless404 } from '../http.ts'
import { backoffMs } from '../retry.ts'
import { inboundKey, inboundRules, type CloudProvider, type CreateMachine, type GcpCredentials, type Inbound, type Machine, type MachineRef, type MachineStatus, type ProviderContext } from '../provider.ts'
import type { Region, Size } from '../../wire/cloud.ts'

const SCOPE = 'https://www.googleapis.com/auth/compute'
const IMAGE = { x86_64: 'projects/ubuntu-os-cloud/global/images/family/ubuntu-2404-lts-amd64', arm64: 'projects/ubuntu-os-cloud/global/images/family/ubuntu-2404-lts-arm64' }
const STATUS: Record<string, MachineStatus> = { PROVISIONING: 'pending', STAGING: 'pending', RUNNING: 'running', STOPPING: 'stopped', STOPPED: 'stopped', SUSPENDING: 'stopped', SUSPENDED: 'stopped', TERMINATED: 'stopped', REPAIRING: 'pending' }

interface Instance {
  /** The numeric id the identity token's instance_id gives. */
  id?: string
  name: string
  zone?: string
  status: string
  labels?: Record<string, string>
  networkInterfaces?: { accessConfigs?: { natIP?: string }[] }[]
}

const describe = (b: unknown) => {
  const e = (b as { error?: { status?: string; message?: string; errors?: { reason?: string }[] } }).error
  return { code: e?.errors?.[0]?.reason ?? e?.status, message: e?.message }
}

const b64url = (b: Uint8Array | string) => Buffer.from(b).toString('base64url')

/** A UUID (what Compute Engine's requestId takes) that is a function of our request id. */
export function requestUuid(requestId: string): string {
  const h = createHash('sha256').update(`muster cloud request ${requestId}`).digest('hex')
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-${((Number.parseInt(h[16]!, 16) & 3) | 8).toString(16)}${h.slice(17, 20)}-${h.slice(20, 32)}`
}

export class GcpProvider implements CloudProvider {
  readonly name = 'gcp' as const
  readonly maxUserDataBytes = 256 * 1024
  private token: { value: string; until: number } | null = null

  constructor(
    private readonly creds: GcpCredentials,
    private readonly ctx: Pick<ProviderContext, 'retry' | 'arch'> & { base: string; tokenUrl: string },
  ) {}

  private get base(): string {
    return this.ctx.base
  }
  private get tokenUrl(): string {
    return this.ctx.tokenUrl
  }

  /** 1. a JWT for the compute scope, signed with the key  2. exchanged at the token endpoint. */
  private async accessToken(): Promise<string> {
    if (this.token && Date.now() < this.token.until) return this.token.value
    const now = Math.floor(Date.now() / 1000)
    const header = { alg: 'RS256', typ: 'JWT', ...(this.creds.private_key_id ? { kid: this.creds.private_key_id } : {}) }
    const claims = { iss: this.creds.client_email, scope: SCOPE, aud: this.tokenUrl, iat: now, exp: now + 3600 }
    const input = `${b64url(JSON.stringify(header))}.${b64url(JSON.stringify(claims))}`
    let key: CryptoKey
    try {
      const der = Buffer.from(this.creds.private_key.replace(/-----[A-Z ]+-----/g, '').replace(/\s+/g, ''), 'base64')
      key = await crypto.subtle.importKey('pkcs8', der, { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256' }, false, ['sign'])
    } catch {
      throw new MusterError('invalid-request', 'Invalid credentials.private_key: not an RSA private key in PKCS#8 PEM.', { field: 'credentials.private_key' })
    }
    const sig = new Uint8Array(await crypto.subtle.sign('RSASSA-PKCS1-v1_5', key, new TextEncoder().encode(input)))
    const body = new URLSearchParams({ grant_type: 'urn:ietf:params:oauth:grant-type:jwt-bearer', assertion: `${input}.${b64url(sig)}` })
    const a = await send('gcp', this.tokenUrl, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: body.toString() }, { idempotent: true, policy: this.ctx.retry })
    let j: { access_token?: string; expires_in?: number; error?: string; error_description?: string } = {}
    try {
      j = JSON.parse(a.text)
    } catch {}
    if (a.status !== 200 || !j.access_token) {
      const why = [j.error, j.error_description].filter(Boolean).join(': ')
      throw new MusterError('cloud-credentials-refused', `gcp refused the credentials (${a.status}${why ? ` ${why}` : ''}).`, { providerStatus: a.status, providerCode: j.error ?? null })
    }
    this.token = { value: j.access_token, until: Date.now() + Math.max((j.expires_in ?? 3600) - 60, 30) * 1000 }
    return this.token.value
  }

  /** POSTs here are inserts with a requestId or firewall inserts (alreadyExists is fine): all safe to send again. */
  private async call<T>(method: string, path: string, body?: unknown) {
    const headers = { authorization: `Bearer ${await this.accessToken()}` }
    return callJson<T>('gcp', `${this.base}/projects/${this.creds.project_id}${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) }, describe, { idempotent: true, policy: this.ctx.retry })
  }

  private async all<T>(path: string): Promise<T[]> {
    const out: T[] = []
    let pageToken: string | undefined
    do {
      const sep = path.includes('?') ? '&' : '?'
      const { body }: { body: { items?: T[]; nextPageToken?: string } } = await this.call('GET', `${path}${pageToken ? `${sep}pageToken=${encodeURIComponent(pageToken)}` : ''}`)
      out.push(...(body.items ?? []))
      pageToken = body.nextPageToken
    } while (pageToken)
    return out
  }

  identityAccount(): string {
    return this.creds.project_id
  }

  async validate() {
    await this.call('GET', '/zones?maxResults=1')
    return { account: `${this.creds.project_id} (${this.creds.client_email})` }
  }

  async regions(): Promise<Region[]> {
    const zones = await this.all<{ name: string; region: string; status: string }>('/zones')
    return zones.map((z) => ({ id: z.name, name: `${z.name} (${z.region.split('/').pop()})`, available: z.status === 'UP' }))
  }

  /** Types for the binary's architecture (`architecture` is ARM64 or X86_64; unset on older x86 types), not deprecated. */
  async sizes(zone?: string): Promise<Size[]> {
    if (!zone) throw new MusterError('invalid-request', 'gcp lists machine types per zone: give a zone as the region (--region).', { field: 'region' })
    const want = this.ctx.arch === 'arm64' ? 'ARM64' : 'X86_64'
    const types = await this.all<{ name: string; guestCpus: number; memoryMb: number; deprecated?: unknown; architecture?: string }>(`/zones/${encodeURIComponent(zone)}/machineTypes`)
    return types
      .filter((t) => !t.deprecated && (t.architecture ?? 'X86_64') === want && diskType(t.name) !== null)
      .map((t) => ({ id: t.name, cpus: t.guestCpus, memoryMB: t.memoryMb, diskGB: null, priceMonthly: null, currency: null }))
  }

  private async instance(zone: string, name: string): Promise<Instance | null> {
    const r = await unless404(this.call<Instance>('GET', `/zones/${encodeURIComponent(zone)}/instances/${encodeURIComponent(name)}`))
    return r && r.body
  }

  async findMachine({ requestId, name, region }: MachineRef): Promise<Machine | null> {
    const i = await this.instance(region, name)
    return i && i.labels?.['muster-request'] === requestId ? machine(region, i) : null
  }

  /**
   * A firewall rule as it should be: read by name; inserted when missing, updated (PUT replaces the
   * rule) when disabled or edited; the Operation polled until DONE. An insert that races another's
   * answers 409 alreadyExists: that rule is then read and checked like any other.
   */
  private async firewall(rule: FirewallRule): Promise<void> {
    const want: FirewallRule = { network: 'global/networks/default', direction: 'INGRESS', disabled: false, ...rule }
    const path = `/global/firewalls/${encodeURIComponent(rule.name)}`
    let found = (await unless404(this.call<FirewallRule>('GET', path)))?.body ?? null
    if (!found) {
      try {
        return await this.operationDone((await this.call<Operation>('POST', '/global/firewalls', want)).body, `firewall rule ${rule.name}`)
      } catch (e) {
        if (!isStatus(e, 409)) throw e
        found = (await this.call<FirewallRule>('GET', path)).body
      }
    }
    if (firewallKey(found) !== firewallKey(want)) await this.operationDone((await this.call<Operation>('PUT', path, want)).body, `firewall rule ${rule.name}`)
  }

  /** Polls a global Operation (firewalls) until DONE; its error, if any, is thrown. */
  private async operationDone(op: Operation, what: string): Promise<void> {
    for (let attempt = 0; op.status !== 'DONE'; attempt++) {
      if (attempt >= 60) throw new MusterError('cloud-provider-error', `gcp did not finish ${what} (operation ${op.name}) in time.`, { retryable: true })
      await this.ctx.retry.sleep(backoffMs(this.ctx.retry, Math.min(attempt, 5)))
      op = (await this.call<Operation>('GET', `/global/operations/${encodeURIComponent(op.name ?? '')}`)).body
    }
    const failed = operationFailure(op)
    if (failed) throw new MusterError('cloud-refused', `gcp could not set ${what}: ${failed}. To fix: give the service account roles/compute.securityAdmin, or fix the rule by hand.`, { providerCode: 'operation-failed' })
  }

  /** The instance's network tags: `muster` (denied all ingress) and, with openings, the tag their allow rules target. */
  private async firewalls(inbound: Inbound): Promise<string[]> {
    await this.firewall({ name: 'muster-deny-inbound', priority: 1000, denied: [{ IPProtocol: 'all' }], sourceRanges: ['0.0.0.0/0'], targetTags: ['muster'], description: 'muster: created machines take no inbound traffic unless muster was told to open it' })
    const rules = inboundRules(inbound)
    if (rules.length === 0) return ['muster']
    const tag = `muster-${inboundKey(inbound)}`
    for (const r of rules) {
      await this.firewall({ name: `${tag}-${r.port === 22 ? 'ssh' : 'agent'}`, priority: 900, allowed: [{ IPProtocol: 'tcp', ports: [String(r.port)] }], sourceRanges: [r.cidr], targetTags: [tag], description: r.port === 22 ? 'muster --allow-ssh-inbound' : 'muster Agent, from the Platform only' })
    }
    return ['muster', tag]
  }

  async createMachine(req: CreateMachine): Promise<Machine> {
    const existing = await this.findMachine(req)
    if (existing) return existing
    const tags = await this.firewalls(req.inbound)
    const zone = encodeURIComponent(req.region)
    const { body: op } = await this.call<Operation>('POST', `/zones/${zone}/instances?requestId=${requestUuid(req.requestId)}`, {
      name: req.name,
      machineType: `zones/${req.region}/machineTypes/${req.size}`,
      labels: { 'managed-by': 'muster', 'muster-request': req.requestId, 'muster-role': req.role },
      tags: { items: tags },
      disks: [{ boot: true, autoDelete: true, initializeParams: { sourceImage: IMAGE[this.ctx.arch], diskType: `zones/${req.region}/diskTypes/${diskType(req.size) ?? 'pd-balanced'}` } }],
      networkInterfaces: [{ network: 'global/networks/default', accessConfigs: [{ type: 'ONE_TO_ONE_NAT', name: 'External NAT' }] }],
      metadata: { items: [{ key: 'user-data', value: req.userData }] },
    })
    const failed = operationFailure(op)
    if (failed) throw new MusterError('cloud-provider-error', `gcp could not create ${req.name}: ${failed}`, { providerCode: 'operation-failed' })
    // the insert Operation's targetId is the instance's numeric id, the one its identity token carries
    return { id: `${req.region}/${req.name}`, status: 'pending', providerStatus: op.status ?? 'PENDING', address: null, operation: op.name ?? null, attestedId: op.targetId ?? null }
  }

  /** GET zones/ZONE/operations/NAME: the insert's error once it is DONE with one. */
  async operationError(machineId: string, operation: string): Promise<string | null> {
    const [zone] = machineId.split('/')
    if (!zone) return null
    const r = await unless404(this.call<Operation>('GET', `/zones/${encodeURIComponent(zone)}/operations/${encodeURIComponent(operation)}`))
    return r ? operationFailure(r.body) : null
  }

  async getMachine(id: string): Promise<Machine | null> {
    const [zone, name] = id.split('/')
    if (!zone || !name) return null
    const i = await this.instance(zone, name)
    return i ? machine(zone, i) : null
  }

  async deleteMachine(id: string): Promise<void> {
    const [zone, name] = id.split('/')
    if (!zone || !name) return
    await unless404(this.call('DELETE', `/zones/${encodeURIComponent(zone)}/instances/${encodeURIComponent(name)}`))
  }
}

/** compute#firewall, the fields muster sets (and compares). */
interface FirewallRule {
  name: string
  network?: string
  direction?: string
  priority?: number
  disabled?: boolean
  sourceRanges?: string[]
  targetTags?: string[]
  allowed?: { IPProtocol: string; ports?: string[] }[]
  denied?: { IPProtocol: string; ports?: string[] }[]
  description?: string
}

/** What a rule lets through (or stops): the network by its name, the lists in order-free form. */
function firewallKey(f: FirewallRule): string {
  const sorted = (xs: string[] | undefined) => [...(xs ?? [])].sort().join(',')
  const protos = (xs: FirewallRule['allowed']) => (xs ?? []).map((x) => `${x.IPProtocol}:${sorted(x.ports)}`).sort().join(';')
  return JSON.stringify([f.network?.split('/').pop(), f.direction ?? 'INGRESS', f.priority ?? 1000, f.disabled === true, sorted(f.sourceRanges), sorted(f.targetTags), protos(f.allowed), protos(f.denied)])
}

/**
 * The boot disk type a machine family takes: Hyperdisk only for the newest families (N4, N4D, C4,
 * C4A, C4D, X4, M4, H4D, A4; https://cloud.google.com/compute/docs/disks/hyperdisks#machine-type-support),
 * pd-balanced for the rest (C3 and C3D refuse the default pd-standard). null: a family muster does not know to boot.
 */
export function diskType(machineType: string): string | null {
  const family = machineType.split('-')[0]!
  if (['n4', 'n4d', 'c4', 'c4a', 'c4d', 'x4', 'm4', 'h4d', 'a4', 'a4x'].includes(family)) return 'hyperdisk-balanced'
  if (['e2', 'n1', 'n2', 'n2d', 't2a', 't2d', 'c2', 'c2d', 'c3', 'c3d', 'm1', 'm2', 'm3', 'a2', 'a3', 'g2', 'f1', 'g1', 'h3', 'z3'].includes(family)) return 'pd-balanced'
  return null
}

/** compute#operation: status PENDING|RUNNING|DONE; a failed one carries error.errors[] (e.g. QUOTA_EXCEEDED, ZONE_RESOURCE_POOL_EXHAUSTED). */
interface Operation {
  name?: string
  targetId?: string
  status?: string
  error?: { errors?: { code?: string; message?: string }[] }
  httpErrorStatusCode?: number
  httpErrorMessage?: string
}

function operationFailure(op: Operation): string | null {
  if (op.status !== 'DONE' || !op.error?.errors?.length) return null
  return op.error.errors.map((e) => [e.code, e.message].filter(Boolean).join(': ')).join('; ').slice(0, 500)
}

function machine(zone: string, i: Instance): Machine {
  return { id: `${zone}/${i.name}`, status: STATUS[i.status] ?? 'pending', providerStatus: i.status, address: i.networkInterfaces?.[0]?.accessConfigs?.[0]?.natIP ?? null, attestedId: i.id ?? null }
}
