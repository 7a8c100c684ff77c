// Readiness probes (docs/nodes.md, docs/security.md): the Platform asks each node that gave an
// address for GET /health over HTTPS, trusting only the certificate that node
// enrolled with, and expects the node's own name back. It dials only an
// address that certificate names, and the node list gets one generic reason
// for every failure (the detail goes to the Platform log). The result is the registry
// entry's `probe`; the registry decides ready/unreachable from it.
import { pinnedFetch, PinMismatchError } from '../crypto/pin.ts'
import { certCovers, ipToBytes } from '../crypto/x509.ts'
import { fields, log } from '../log.ts'
import type { Context } from '../context/context.ts'
import type { Fabric } from './fabric.ts'
import { getNode } from '../store/nodes.ts'
import { probesSince, writeProbes } from '../store/node-probes.ts'
import type { Lease } from '../context/leases.ts'
import type { NodeEntry } from './registry.ts'
import { tunableNumber } from '../tunables.ts'
import { spanEnd, spanStart } from '../loop-spans.ts'

const TIMEOUT_MS = 5_000
const CONCURRENCY = 16
/** Candidates looked at between two turns of the event loop. */
const SWEEP_SLICE = 5_000
/** How often the probing Platform looks for due probes (and the others read results). */
const TICK_MS = 1_000

export interface ProbeResult {
  ok: boolean
  /** What the node list shows: generic, so the probe tells nobody whether some port is open (docs/security.md). */
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

/**
 * Probes run on one Platform among those sharing the store, the holder of the
 * `probes` lease: every second it probes the nodes whose last probe is older
 * than the interval (or that have none), and writes the results to the store
 * in a fenced transaction. Every other Platform reads them from there (told at
 * once, and every 2 s in case a notice was lost), so all agree on readiness.
 */
export class ReadinessProber {
  readonly intervalMs: number
  private timer: ReturnType<typeof setInterval> | undefined
  private readonly inFlight = new Map<string, Promise<void>>()
  private stopped = false
  private readonly lease: Lease
  /** Newest result time read from the store. */
  private readTo = 0
  private ticks = 0

  constructor(
    private readonly ctx: Context,
    private readonly fabric: Fabric,
    intervalMs?: number,
  ) {
    this.intervalMs = intervalMs ?? tunableNumber('MUSTER_PROBE_INTERVAL_MS')
    this.lease = ctx.leases.lease('probes')
  }

  start(): void {
    const fabric = this.fabric
    // A node's first heartbeat (or one after a long gap) gets a probe at once,
    // so it does not wait a whole interval to become ready.
    fabric.heartbeatListeners.push((n) => {
      if (this.lease.held && n.url && (!n.probe || this.ctx.now() - n.probe.at >= this.intervalMs)) void this.probe(n.name)
    })
    this.ctx.changes.on('probes', (_key, local) => {
      if (!local) void this.readResults().catch(() => {})
    })
    this.timer = setInterval(() => void this.tick().catch((e) => log.warn(`probes: ${(e as Error).message}`)), TICK_MS)
    this.timer.unref?.()
    this.ctx.onClose(() => this.stop())
  }

  stop(): void {
    this.stopped = true
    if (this.timer) clearInterval(this.timer)
  }

  private async tick(): Promise<void> {
    if (this.lease.held) return this.probeDue()
    if (++this.ticks % 2 === 0) await this.readResults()
  }

  /**
   * Probes, CONCURRENCY at a time, every node with an address whose last
   * probe is older than the interval. Not a node that never heartbeated: its
   * Agent has not started, so a probe would only fail and mark a new node
   * unreachable (docs/operations.md); its first heartbeat probes it at once.
   */
  async probeDue(): Promise<void> {
    const now = this.ctx.now()
    const names = await this.candidates((n) => n.lastSeenAt !== null && (!n.probe || now - n.probe.at >= this.intervalMs))
    for (let i = 0; i < names.length; i += CONCURRENCY) await Promise.all(names.slice(i, i + CONCURRENCY).map((name) => this.probe(name)))
  }

  /** Probes every node with an address now. */
  async probeAll(): Promise<void> {
    const names = await this.candidates(() => true)
    for (let i = 0; i < names.length; i += CONCURRENCY) await Promise.all(names.slice(i, i + CONCURRENCY).map((name) => this.probe(name)))
  }

  /**
   * The nodes with an address, a certificate and a working credential that `also` takes: only the nodes
   * that gave an address are walked (Registry.addressed), SWEEP_SLICE at a time, so a fleet of a million
   * never holds the event loop for the walk (it held it ~80 ms a second: docs/benchmarks.md).
   */
  private async candidates(also: (n: NodeEntry) => boolean): Promise<string[]> {
    const registry = this.fabric.registry
    const names: string[] = []
    let seen = 0
    let started = spanStart()
    // A Set may change while it is walked (a node that comes is seen or not, one that goes is not).
    for (const name of registry.addressed) {
      if (++seen % SWEEP_SLICE === 0) {
        spanEnd('probes: due sweep', started)
        await new Promise((r) => setImmediate(r))
        started = spanStart()
      }
      const n = registry.get(name)
      if (n && n.url && n.certSha256 && n.revokedAt === null && also(n)) names.push(name)
    }
    spanEnd('probes: due sweep', started)
    return names
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
      if (result.ok) log.info(`node ${name}: health probe passes`, fields({ node: name }))
      else log.warn(`node ${name}: ${result.detail ?? result.reason}`, fields({ node: name }))
    }
    const at = this.ctx.now()
    now.probe = { ok: result.ok, at, ...(result.reason ? { reason: result.reason } : {}) }
    // For the other Platforms: only while this one still probes (fenced), else they have their own results.
    await this.lease
      .run(() => this.lease.fenced((t) => writeProbes(t, [{ name, cert_sha256: before.certSha256!, ok: result.ok ? 1 : 0, at, reason: result.reason ?? null }])))
      .then(() => this.ctx.changes.publish('probes', name))
      .catch((e) => log.warn(`recording the probe of ${name}: ${(e as Error).message}`))
  }

  /** Takes the results the probing Platform wrote since the last read. */
  async readResults(): Promise<void> {
    const registry = this.fabric.registry
    for (const r of await probesSince(this.ctx.store, Math.max(0, this.readTo - 5_000))) {
      this.readTo = Math.max(this.readTo, r.at)
      const n = registry.get(r.name)
      if (!n || n.certSha256 !== r.cert_sha256 || (n.probe && n.probe.at > r.at)) continue
      n.probe = { ok: r.ok === 1, at: r.at, ...(r.reason ? { reason: r.reason } : {}) }
    }
  }
}
