// Readiness probes (SPEC §6, §16.7): the Platform asks each node that gave an
// address for GET /health over HTTPS, trusting only the certificate that node
// enrolled with, and expects the node's own name back. It dials only an
// address that certificate names, and the node list gets one generic reason
// for every failure (the detail goes to the Platform log). The result is the registry
// entry's `probe`; the registry decides ready/unreachable from it.
import { pinnedFetch, PinMismatchError } from '../crypto/pin.ts'
import { certCovers, ipToBytes } from '../crypto/x509.ts'
import { log } from '../log.ts'
import type { Context } from '../context.ts'
import type { Fabric } from './fabric.ts'
import { getNode } from '../store/nodes.ts'
import type { NodeEntry } from './registry.ts'

const DEFAULT_INTERVAL_MS = 15_000
const TIMEOUT_MS = 5_000
const CONCURRENCY = 16

export interface ProbeResult {
  ok: boolean
  /** What the node list shows: generic, so the probe tells nobody whether some port is open (SPEC §16.7). */
  reason?: string
  /** What went wrong, for the Platform log only. */
  detail?: string
}

export const PROBE_FAILED = 'health probe failed'
export const ADDRESS_NOT_NAMED = 'not probed: the address it gave is not named in its certificate'

/**
 * Whether the host of a node's URL is one of its certificate's SANs. The
 * Platform dials only such addresses: a node cannot point the probe at
 * anything its own certificate does not name.
 */
export function urlNamedByCertificate(url: string, certPem: string): boolean {
  if (!URL.canParse(url)) return false
  const u = new URL(url)
  if (u.protocol !== 'https:') return false
  const host = u.hostname
  return ipToBytes(host) ? certCovers(certPem, { ipAddresses: [host] }) : certCovers(certPem, { dnsNames: [host] })
}

/** One probe: `url`/health must present `certPem` and answer as `name`. */
export async function probeAgent(url: string, certPem: string, name: string, timeoutMs = TIMEOUT_MS): Promise<ProbeResult> {
  if (!urlNamedByCertificate(url, certPem)) return { ok: false, reason: ADDRESS_NOT_NAMED, detail: `${url} is not named in its certificate` }
  const failed = (detail: string): ProbeResult => ({ ok: false, reason: PROBE_FAILED, detail })
  try {
    const res = await pinnedFetch(`${url.replace(/\/+$/, '')}/health`, { method: 'GET', signal: AbortSignal.timeout(timeoutMs) }, { caPem: certPem })
    if (res.status !== 200) return failed(`health probe answered ${res.status}`)
    const body = (await res.json().catch(() => null)) as { node?: unknown } | null
    if (body?.node !== name) return failed(`health probe answered as ${typeof body?.node === 'string' ? body.node : 'something else'}, not ${name}`)
    return { ok: true }
  } catch (e) {
    if (e instanceof PinMismatchError) return failed('health probe: the agent presented another certificate')
    const err = e as { code?: string; name?: string; message?: string }
    if (err.name === 'TimeoutError') return failed(`health probe timed out after ${timeoutMs / 1000}s`)
    if (/CERT|certificate|self[- ]signed|SELF_SIGNED|altname|ALTNAME/i.test(`${err.code} ${err.message}`)) return failed('health probe: the agent presented another certificate')
    return failed(`health probe failed: ${err.code === 'ConnectionRefused' || err.code === 'ECONNREFUSED' ? 'connection refused' : (err.message ?? String(e))}`)
  }
}

export class ReadinessProber {
  readonly intervalMs: number
  private timer: ReturnType<typeof setInterval> | undefined
  private readonly inFlight = new Map<string, Promise<void>>()
  private stopped = false

  constructor(
    private readonly ctx: Context,
    private readonly fabric: Fabric,
    intervalMs?: number,
  ) {
    const env = Number(process.env.MUSTER_PROBE_INTERVAL_MS)
    this.intervalMs = intervalMs ?? (env > 0 ? env : DEFAULT_INTERVAL_MS)
  }

  start(): void {
    const fabric = this.fabric
    // A node's first heartbeat (or one after a long gap) gets a probe at once,
    // so it does not wait a whole interval to become ready.
    fabric.heartbeatListeners.push((n) => {
      if (n.url && (!n.probe || this.ctx.now() - n.probe.at >= this.intervalMs)) void this.probe(n.name)
    })
    this.timer = setInterval(() => void this.probeAll(), this.intervalMs)
    this.timer.unref?.()
    this.ctx.onClose(() => this.stop())
  }

  stop(): void {
    this.stopped = true
    if (this.timer) clearInterval(this.timer)
  }

  /** Probes every node with an address, CONCURRENCY at a time. */
  async probeAll(): Promise<void> {
    const names = [...this.fabric.registry.nodes.values()].filter((n) => n.url && n.certSha256 && n.revokedAt === null).map((n) => n.name)
    for (let i = 0; i < names.length; i += CONCURRENCY) await Promise.all(names.slice(i, i + CONCURRENCY).map((name) => this.probe(name)))
  }

  /** Probes one node (joins a probe already running for it). */
  probe(name: string): Promise<void> {
    const running = this.inFlight.get(name)
    if (running) return running
    const p = this.run(name).finally(() => this.inFlight.delete(name))
    this.inFlight.set(name, p)
    return p
  }

  private async run(name: string): Promise<void> {
    const registry = this.fabric.registry
    const before = registry.get(name)
    if (!before?.url || !before.certSha256 || this.stopped) return
    const row = await getNode(this.ctx.store, name)
    if (!row?.cert_pem) return
    const result = await probeAgent(before.url, row.cert_pem, name)
    const now: NodeEntry | undefined = registry.get(name)
    // The node may have been rebound or removed meanwhile: record only for the same certificate.
    if (!now || now.certSha256 !== before.certSha256 || this.stopped) return
    if (!now.probe || now.probe.ok !== result.ok) {
      if (result.ok) log.info(`node ${name}: health probe passes`)
      else log.warn(`node ${name}: ${result.detail ?? result.reason}`)
    }
    now.probe = { ok: result.ok, at: this.ctx.now(), ...(result.reason ? { reason: result.reason } : {}) }
  }
}
