// The Agent (docs/nodes.md, docs/security.md): serves its HTTPS port, heartbeats to the
// Platform with its node credential (version, capacity, replica status),
// renews the credential daily (and once on a 401), refreshes trust keys at
// start, daily, and at once when it meets a signature by a kid it does not
// hold (at most once a minute), and keeps going through outages with backoff;
// with several Platforms it moves to another when its current one fails
// (platform-choice.ts). "Daily" is by the wall clock, checked on a short tick,
// so a clock that jumped is noticed within the tick (intervals: src/tunables.ts).
import { SingleFlight } from '../single-flight.ts'
import type { Server } from 'bun'
import { availableParallelism, totalmem } from 'node:os'
import type { HeartbeatAnswer, ReplicaStatus, TrustKey } from '../wire/nodes.ts'
import { DataDir } from '../datadir.ts'
import { bindHostFor } from '../addresses.ts'
import { MusterError } from '../errors.ts'
import { fields, log } from '../log.ts'
import { VERSION } from '../version.ts'
import { apiClient } from './connect.ts'
import { credentialGeneration, readCredential, readTrustFile, requireJoined, WORKER, writeCredential, type AgentConfig } from './files.ts'
import { startAgentServer, type SignedHandler } from './server.ts'
import { refreshTrust } from './trust.ts'
import { signRenewProof } from '../crypto/enroll-proof.ts'
import { isPlatformFailure, PlatformChoice } from './platform-choice.ts'
import { startWorkloads, type Workloads } from './workloads.ts'
import { deadStanding, wayBack } from './standing.ts'
import { reconnectDelayMs } from './backoff.ts'
import type { AgentLink } from './link.ts'
import { tunable, tunableNumber } from '../tunables.ts'
import { agentHeartbeats, agentRenewals } from '../metrics/agent.ts'

const MAX_BACKOFF_MS = 5 * 60_000
/** At most one refresh for an unknown kid per minute (monotonic, so no clock can hurry it). */
export const UNKNOWN_KID_REFRESH_MS = 60_000
/** A failed daily refresh or renewal is tried again this soon. */
const RETRY_MS = 60_000

export interface AgentOptions {
  dataDir: string
  now?: () => number
  /** Bind address (default all interfaces, or $MUSTER_AGENT_HOST). */
  host?: string
  /** Listen on this port instead of the configured one (tests: 0). */
  port?: number
  heartbeatMs?: number
  renewMs?: number
  trustMs?: number
  /** How often the wall clock is checked for a due refresh or renewal (default 30 s). */
  tickMs?: number
  /** Pull and run assignments (default true). */
  workloads?: boolean
  /** `--run-as USER`: the account replicas run as (src/replicas/isolation.ts). */
  runAs?: string
}

export function capacity(): { cpuMillis: number; memoryMB: number } {
  return { cpuMillis: availableParallelism() * 1000, memoryMB: Math.floor(totalmem() / 1048576) }
}

export class Agent {
  /** Replica status for heartbeats; the workload runner replaces this. */
  replicaStatus: () => ReplicaStatus[] = () => []
  /** Called with every heartbeat answer (the workloads fetch assignments when their revision moved). */
  afterHeartbeat: (answer: HeartbeatAnswer) => void = () => {}
  /** Further parts' heartbeat hooks (the updater: src/agent/update/updater.ts), called after the workloads'; add with `onHeartbeat`. */
  private readonly heartbeatHooks: ((answer: HeartbeatAnswer) => void)[] = []
  readonly onHeartbeat = (hook: (answer: HeartbeatAnswer) => void): void => void this.heartbeatHooks.push(hook)
  /** Signed requests from the Platform (other than /health) go here; undefined = 404. */
  handleSigned: SignedHandler = () => undefined
  readonly dataDir: DataDir
  /** Replaced when a trust answer moves the node to new pins or a new API URL. */
  config: AgentConfig
  /** The Platforms this node may use and the one it uses now. */
  readonly platforms: PlatformChoice
  readonly now: () => number
  readonly intervals: { heartbeat: number; renew: number; trust: number; tick: number }
  /** The last state the Platform reported for this node. */
  state: string | undefined
  private credential: string
  private trust: TrustKey[]
  private server: Server<unknown> | undefined
  private readonly timers = new Set<ReturnType<typeof setTimeout>>()
  private stopped = false
  /** Heartbeats failed in a row, and the wait before the next one after them (the metrics read both). */
  failures = 0
  backoffMs = 0
  trustRefreshedAt: number | undefined
  private renewedAfter401 = false
  private readonly renewing = new SingleFlight<boolean>()
  /** Set by a 429 on renew: no renewal before this (real) time. */
  private renewNotBefore = 0
  private nudging: ReturnType<typeof setTimeout> | undefined
  /** Wall-clock times (ms) at which the trust refresh and the renewal are next due. */
  private trustDueAt = 0
  private renewDueAt = 0
  private readonly refreshing = new SingleFlight<boolean>()
  /** Ticks completed (tests wait on it to see that nothing was due). */
  ticks = 0
  /** performance.now() of the last refresh made for an unknown kid. */
  private lastUnknownKidRefresh = -Infinity
  workloads: Workloads | undefined
  /**
   * Settles with one line (why, and the way back) when the Platform refused
   * this node's credential for good: revoked, removed, rebound. The Agent has
   * stopped its loops by then; `muster agent` exits with status 3.
   */
  readonly refusedForGood: Promise<string>
  private refusedLine: ((line: string) => void) | undefined

  constructor(private readonly options: AgentOptions) {
    this.dataDir = new DataDir(options.dataDir)
    this.config = requireJoined(this.dataDir)
    this.credential = readCredential(this.dataDir)
    this.platforms = new PlatformChoice(this.dataDir, () => this.config)
    this.refusedForGood = new Promise((resolve) => {
      this.refusedLine = resolve
    })
    this.trust = readTrustFile(this.dataDir)?.keys ?? []
    this.now = options.now ?? Date.now
    this.intervals = {
      heartbeat: options.heartbeatMs ?? tunableNumber('MUSTER_AGENT_HEARTBEAT_MS'),
      renew: options.renewMs ?? tunableNumber('MUSTER_AGENT_RENEW_MS'),
      trust: options.trustMs ?? tunableNumber('MUSTER_AGENT_TRUST_MS'),
      tick: options.tickMs ?? tunableNumber('MUSTER_AGENT_TICK_MS'),
    }
  }

  get port(): number {
    return this.server?.port ?? this.config.port
  }

  get trustKeys(): TrustKey[] {
    return this.trust
  }

  get nodeCredential(): string {
    return this.credential
  }

  /** How to reach the Platform this node uses now. */
  connection(): AgentConfig {
    return this.platforms.connection()
  }

  /** A request to the Platform at `url` failed with `e`: move to another Platform when that one failed. */
  platformFailed(url: string, e: unknown): boolean {
    return isPlatformFailure(e) && this.platforms.failed(url)
  }

  /** What the Agent's parts see of it (src/agent/link.ts). */
  private link(): AgentLink {
    return {
      dataDir: this.dataDir,
      node: this.config.nodeId,
      now: () => this.now(),
      trustKeys: () => this.trust,
      refreshForUnknownKid: () => this.refreshForUnknownKid(),
      platformUrl: () => this.platforms.current,
      api: () => apiClient(this.connection(), this.credential),
      platformFailed: (url, e) => this.platformFailed(url, e),
      nudge: () => this.nudge(),
    }
  }

  /** Sends an extra heartbeat soon (replica state changed), coalescing bursts. */
  nudge(): void {
    if (this.stopped || this.nudging) return
    this.nudging = setTimeout(() => {
      this.nudging = undefined
      this.heartbeat().catch(() => {})
    }, 200)
  }

  async start(): Promise<void> {
    const keyPem = this.dataDir.readSecretText(WORKER.key)
    const certPem = this.dataDir.exists(WORKER.cert) ? this.dataDir.readSecretText(WORKER.cert) : undefined
    if (!keyPem || !certPem) throw new MusterError('not-configured', `${this.dataDir.path(WORKER.dir)} has no agent key or certificate: join again after removing it.`)
    // First: who replicas run as (a --run-as that cannot be honoured stops the start), and what an earlier Agent left running.
    if (this.options.workloads !== false) {
      const w = await startWorkloads(this.link(), { runAs: this.options.runAs })
      this.workloads = w
      this.replicaStatus = () => w.replicaStatus()
      this.afterHeartbeat = (a) => w.afterHeartbeat(a)
      const other = this.handleSigned
      this.handleSigned = (r) => w.handleSigned(r) ?? other(r)
    }
    this.server = startAgentServer({
      host: this.options.host ?? tunable('MUSTER_AGENT_HOST') ?? bindHostFor(this.config.addresses),
      port: this.options.port ?? this.config.port,
      certPem,
      keyPem,
      node: this.config.nodeId,
      now: this.now,
      trustKeys: () => this.trust,
      refreshForUnknownKid: () => this.refreshForUnknownKid(),
      handle: () => this.handleSigned,
    })
    log.info(`agent ${this.config.nodeId} listening on port ${this.port}; Platform API ${this.platforms.current}`, fields({ node: this.config.nodeId }))
    // Trust refresh runs beside the first heartbeat: a slow enrollment URL must not hold it up.
    const now = this.now()
    this.renewDueAt = now + this.intervals.renew
    void this.refreshTrust()
    this.every(this.intervals.tick, () => this.tick())
    void this.beat()
  }

  /** Stops the Agent; its replicas keep running for the next Agent unless `stopReplicas`. */
  async stop(opts: { stopReplicas?: boolean } = {}): Promise<void> {
    this.halt()
    await this.workloads?.stop(opts.stopReplicas === true)
    await this.server?.stop(true)
    this.server = undefined
    log.info(`agent ${this.config.nodeId} stopped`, fields({ node: this.config.nodeId }))
  }

  /** Ends every loop (no heartbeat, renewal or refresh is started after this). */
  private halt(): void {
    this.stopped = true
    for (const t of this.timers) clearTimeout(t)
    this.timers.clear()
    if (this.nudging) clearTimeout(this.nudging)
  }

  /** Asks for trust keys over the pinned connection; on failure keeps the current ones. One at a time. */
  refreshTrust(): Promise<boolean> {
    return this.refreshing.run(async () => {
      // The next one is due a day after this one was asked for, whatever the answer took.
      const asked = this.now()
      try {
        // The current Platform's listener first, then the one joined through, then the others (one pin for all).
        let failure: unknown
        for (const via of this.platforms.trustUrls()) {
          try {
            const r = await refreshTrust(this.dataDir, this.config, asked, via)
            this.trust = r.keys
            this.platforms.apiMoved(this.config.platformUrl, r.config.platformUrl)
            this.config = r.config
            this.trustDueAt = asked + this.intervals.trust
            this.trustRefreshedAt = asked
            return true
          } catch (e) {
            failure ??= e
          }
        }
        throw failure ?? new Error('no enrollment listener is known')
      } catch (e) {
        this.trustDueAt = asked + Math.min(RETRY_MS, this.intervals.trust)
        log.warn(`${(e as Error).message} Keeping the current ${this.trust.length} trust key(s).`)
        return false
      }
    })
  }

  /**
   * A signature by a kid this node does not hold (or not valid now): refresh
   * at once, at most once a minute, so the caller can verify again. False when
   * no refresh was made or it failed.
   */
  refreshForUnknownKid(): Promise<boolean> {
    return this.refreshSoon('a signature by a key this node does not hold')
  }

  /** A trust refresh now, for a reason other than the day passing; at most once a minute. */
  private async refreshSoon(why: string): Promise<boolean> {
    // A refresh under way may have been asked before what we need existed: let it finish, then ask again if allowed.
    const inFlight = this.refreshing.busy ? await this.refreshTrust() : false
    if (performance.now() - this.lastUnknownKidRefresh < UNKNOWN_KID_REFRESH_MS) return inFlight
    const before = this.lastUnknownKidRefresh
    this.lastUnknownKidRefresh = performance.now()
    log.info(`${why}: refreshing trust keys`)
    const ok = await this.refreshTrust()
    // Only a refresh that reached a Platform uses the minute: one made while the Platform restarts must not
    // keep the node from fetching a key it then publishes (at most one try per heartbeat meanwhile).
    if (!ok) this.lastUnknownKidRefresh = before
    return ok
  }

  /** Due work by the wall clock: a clock that jumped (either way) makes the daily work due at once. */
  private async tick(): Promise<void> {
    const now = this.now()
    const jumped = (due: number, period: number) => now >= due || due - now > period + this.intervals.tick
    if (jumped(this.trustDueAt, this.intervals.trust)) await this.refreshTrust()
    if (jumped(this.renewDueAt, this.intervals.renew)) {
      const asked = this.now()
      const ok = await this.renew()
      this.renewDueAt = asked + (ok ? this.intervals.renew : Math.min(RETRY_MS, this.intervals.renew))
    }
    this.ticks++
  }

  /**
   * Trades the node credential for the next generation (one at a time), with a
   * proof of the agent key: the Platform renews no credential without it, so a
   * copy of the credential cannot renew this node out (docs/security.md).
   * A 429 is retried once its Retry-After has passed.
   */
  renew(): Promise<boolean> {
    if (Date.now() < this.renewNotBefore) return Promise.resolve(false)
    return this.renewing.run(async () => {
      try {
        const generation = credentialGeneration(this.credential) ?? 0
        const proof = signRenewProof({ keyPem: this.dataDir.readSecretText(WORKER.key) ?? '', certPem: this.dataDir.readSecretText(WORKER.cert) ?? '', nodeId: this.config.nodeId, generation, nowMs: this.now() })
        const r = await apiClient(this.connection(), this.credential).nodes.renew(proof)
        this.credential = r.credential
        writeCredential(this.dataDir, r.credential)
        log.info(`node credential renewed (generation ${r.generation})`)
        agentRenewals.inc({ outcome: 'ok' })
        return true
      } catch (e) {
        agentRenewals.inc({ outcome: 'failed' })
        log.warn(`node credential renewal failed: ${(e as Error).message}`)
        if (e instanceof MusterError && e.code === 'rate-limited') {
          const waitMs = 1000 * Math.min(3600, Math.max(1, Number(e.detail?.retryAfterSeconds) || 60))
          this.renewNotBefore = Date.now() + waitMs
          this.after(waitMs, () => this.renew())
        }
        return false
      }
    })
  }

  /** One heartbeat; throws what the Platform or the network said. */
  async heartbeat(): Promise<HeartbeatAnswer> {
    const r = await apiClient(this.connection(), this.credential).nodes.register({ version: VERSION, capacity: capacity(), replicas: this.replicaStatus() })
    this.platforms.succeeded(r.platforms)
    if (r.state !== this.state) log.info(`node ${this.config.nodeId} is ${r.state}${r.reason ? ` (${r.reason})` : ''}`, fields({ node: this.config.nodeId, state: r.state }))
    this.state = r.state
    this.afterHeartbeat(r)
    for (const hook of this.heartbeatHooks) hook(r)
    return r
  }

  private async beat(): Promise<void> {
    if (this.stopped) return
    let delay = this.intervals.heartbeat
    const url = this.platforms.current
    try {
      const r = await this.heartbeat()
      agentHeartbeats.inc({ outcome: 'ok' })
      if (this.failures > 0) log.info(`the Platform answers again after ${this.failures} failed heartbeat(s)`)
      this.failures = this.backoffMs = 0
      this.renewedAfter401 = false
      // An operator rotated the credential: the old one works for an hour, so trade it now.
      if ((credentialGeneration(this.credential) ?? r.generation) < r.generation) await this.renew()
    } catch (e) {
      agentHeartbeats.inc({ outcome: 'failed' })
      delay = this.backoffMs = this.platformFailed(url, e) ? 0 : await this.afterFailedBeat(e)
    }
    this.after(delay, () => this.beat())
  }

  private async afterFailedBeat(e: unknown): Promise<number> {
    const err = e instanceof MusterError ? e : new MusterError('platform-unreachable', (e as Error).message)
    if (err.code === 'unauthorized' && !this.renewedAfter401) {
      this.renewedAfter401 = true
      log.warn('the Platform refused the node credential; trying a renewal once')
      if (await this.renew()) return 0
    }
    if (err.code === 'rate-limited') return Math.min(MAX_BACKOFF_MS, 1000 * Math.max(1, Number(err.detail?.retryAfterSeconds) || 1))
    // A refusal (never a network failure, 5xx or 429) may be for good: the Platform says which.
    if (err.code === 'node-revoked' || err.code === 'unauthorized') {
      const dead = await deadStanding(this.connection(), this.credential, this.dataDir.readSecretText(WORKER.cert), err.code)
      if (dead) {
        this.halt()
        this.refusedLine?.(`the Platform refuses this node's credential for good: ${wayBack(dead, this.config, this.dataDir.root)}`)
        return 0
      }
    }
    this.failures++
    // The API may have moved (to https, another address): the trust answer names where it is now.
    if (err.code === 'platform-unreachable' && this.failures >= 3) {
      const before = this.config.platformUrl
      if ((await this.refreshSoon('the Platform API does not answer')) && this.config.platformUrl !== before) {
        log.info(`the Platform API moved to ${this.config.platformUrl}`)
        this.failures = 0
        return 0
      }
    }
    if (this.failures === 1 || this.failures % 10 === 0) {
      log.warn(`heartbeat failed (${this.failures}x): ${err.message.replace(/\.$/, '')}. Keeping trust keys; retrying with backoff.`)
    }
    return reconnectDelayMs(this.failures, this.intervals.heartbeat)
  }

  private after(ms: number, fn: () => unknown): void {
    if (this.stopped) return
    const t = setTimeout(() => {
      this.timers.delete(t)
      void fn()
    }, ms)
    this.timers.add(t)
  }

  private every(ms: number, fn: () => unknown): void {
    this.after(ms, async () => {
      await fn()
      this.every(ms, fn)
    })
  }
}
