// The office's side of membership: registers with the controller and then
// heartbeats, each time with a fresh nonce, and believes an answer only when
// the controller's signature over (office id, token fingerprint, nonce)
// verifies under the key its token carried. Unacknowledged break-glass acts
// ride along on every heartbeat until a signed answer acknowledges them.
// When several Platforms serve the office (one store), only the holder of the
// `federation-heartbeat` lease talks to the controller; the others are on
// standby and take over within 15 s if it dies.
import { createTransport } from '../client/http.ts'
import { b64url, randomBytes } from '../crypto/tokens.ts'
import { MusterError } from '../errors.ts'
import { log } from '../log.ts'
import { VERSION } from '../version.ts'
import { DOMAINS, formatOfficeToken } from '../wire/federation-formats.ts'
import type { OfficeConfig } from './membership.ts'
import { clearMembershipEnded, markBreakGlassReported, markMembershipEnded, unreportedBreakGlass } from './office-store.ts'
import { placedProjectStatuses } from './office.ts'
import type { Federation } from './service.ts'
import { verifyProof } from './proofs.ts'
import { LeaseLost, type Lease } from '../context/leases.ts'

const REQUEST_TIMEOUT_MS = 10_000

export type LinkState = 'starting' | 'standby' | 'connected' | 'controller-unverified' | 'revoked' | 'refused' | 'unreachable' | 'no-controller'

interface SignedAnswer {
  officeId?: unknown
  at?: unknown
  acknowledged?: unknown
  proof?: unknown
}

export class OfficeLink {
  state: LinkState = 'starting'
  lastContactAt: number | null = null
  /** True once a registration answer verified; heartbeats are sent only then. */
  private verified = false
  private timer: ReturnType<typeof setTimeout> | undefined
  private running: Promise<void> | undefined
  private stopped = false
  /** Aborts an in-flight request on stop, so closing the Platform never waits on a silent controller. */
  private readonly abort = new AbortController()
  private readonly tokenText: string
  private readonly lease: Lease
  /** Whether the end of this membership the controller answered is in the store already. */
  private endedRecorded = false

  constructor(
    private readonly fed: Federation,
    readonly config: OfficeConfig,
    readonly intervalMs: number,
  ) {
    this.tokenText = formatOfficeToken(config.token.officeId, config.token.controllerKey, config.token.secret)
    this.lease = fed.ctx.leases.lease('federation-heartbeat')
  }

  start(): void {
    if (!this.config.controllerUrl || !this.config.advertiseUrl) {
      this.state = 'no-controller'
      log.warn(`federation: joined as office ${this.config.officeId} but no controller URL is known; set MUSTER_CONTROLLER_URL and MUSTER_ADVERTISE_URL to heartbeat`)
      return
    }
    const controller = new URL(this.config.controllerUrl)
    if (controller.protocol !== 'https:' && !['127.0.0.1', 'localhost', '[::1]'].includes(controller.hostname)) {
      log.warn(`federation: the controller URL ${this.config.controllerUrl} is plain http: this office's secret crosses the network unencrypted on every registration; use https`)
    }
    log.info(`federation: office ${this.config.officeId} registering with controller ${this.config.controllerUrl}`)
    const tick = () => {
      if (this.stopped) return
      this.timer = undefined
      this.running = this.cycle().finally(() => {
        if (!this.stopped) this.timer = setTimeout(tick, this.intervalMs)
      })
    }
    // Taking the heartbeat over (or getting it at start): register now, not an interval later.
    this.lease.onChange((held) => {
      if (held && this.timer !== undefined) {
        clearTimeout(this.timer)
        tick()
      }
    })
    tick()
    this.fed.ctx.onClose(() => this.stop())
  }

  async stop(): Promise<void> {
    this.stopped = true
    clearTimeout(this.timer)
    this.abort.abort()
    await this.running
  }

  /** One cycle: register until a registration verifies, then heartbeat (only on the lease holder). */
  private async cycle(): Promise<void> {
    if (!this.lease.held) {
      // Another Platform of this office talks to the controller; register again on taking over.
      this.state = 'standby'
      this.verified = false
      return
    }
    try {
      if (!this.verified) {
        this.verified = await this.register()
        if (!this.verified) return
      }
      this.verified = await this.heartbeat()
    } catch (e) {
      this.verified = false
      if (e instanceof LeaseLost) {
        this.state = 'standby'
        return
      }
      await this.failed(e)
    }
  }

  private body(nonce: string) {
    return { token: this.tokenText, officeId: this.config.officeId, advertiseUrl: this.config.advertiseUrl!, nonce, version: VERSION, heartbeatSeconds: this.intervalMs / 1000 }
  }

  private async post(path: string, body: Record<string, unknown>): Promise<SignedAnswer> {
    const signal = AbortSignal.any([this.abort.signal, AbortSignal.timeout(REQUEST_TIMEOUT_MS)])
    const transport = createTransport({ url: this.config.controllerUrl!, fetch: (u, init) => fetch(u, { ...init, signal }) })
    return (await transport<SignedAnswer>('POST', path, body)) ?? {}
  }

  /** Steps 1–3 of joining: send a fresh nonce, get a signed answer, verify it before believing anything. */
  private async register(): Promise<boolean> {
    const nonce = b64url(randomBytes(32))
    const answer = await this.post('/api/v1/federation/register', this.body(nonce))
    if (!this.verifies(DOMAINS.register, nonce, answer, {})) return false
    // The controller accepts this membership (again): an end recorded from an earlier refusal no longer holds.
    await this.lease.fenced((t) => clearMembershipEnded(t, this.config.fingerprint))
    if (this.state !== 'connected') log.info(`federation: joined controller ${this.config.controllerUrl} as office ${this.config.officeId}`)
    return true
  }

  /** Step 4, every interval: report, and mark reports delivered only on a signed acknowledgement. */
  private async heartbeat(): Promise<boolean> {
    const db = this.fed.ctx.store
    const pending = await unreportedBreakGlass(db)
    const nonce = b64url(randomBytes(32))
    const breakGlass = pending.map((r) => ({ id: r.id, account: r.account, at: r.at, tokenFingerprint: r.token_fingerprint }))
    const answer = await this.post('/api/v1/federation/heartbeat', { ...this.body(nonce), breakGlass, projects: await placedProjectStatuses(this.fed) })
    const acknowledged = Array.isArray(answer.acknowledged) ? answer.acknowledged.filter((x): x is string => typeof x === 'string') : []
    if (!this.verifies(DOMAINS.heartbeat, nonce, answer, { acknowledged: answer.acknowledged })) return false
    const sent = new Set(pending.map((r) => r.id))
    const delivered = acknowledged.filter((id) => sent.has(id))
    if (delivered.length > 0) await this.lease.fenced((t) => markBreakGlassReported(t, delivered, this.fed.ctx.now()))
    return true
  }

  private verifies(domain: (typeof DOMAINS)['register' | 'heartbeat'], nonce: string, answer: SignedAnswer, extra: Record<string, unknown>): boolean {
    const fields = { officeId: this.config.token.officeId, tokenFingerprint: this.config.fingerprint, nonce, at: answer.at, ...extra }
    if (typeof answer.at === 'number' && verifyProof(domain, this.config.token.controllerKey, fields, answer.proof)) {
      this.lastContactAt = this.fed.ctx.now()
      this.state = 'connected'
      this.endedRecorded = false
      return true
    }
    if (this.state !== 'controller-unverified') {
      log.error(`federation: the answer from ${this.config.controllerUrl} is not signed by the controller this office's token names; not heartbeating until one verifies`)
    }
    this.state = 'controller-unverified'
    return false
  }

  private async failed(e: unknown): Promise<void> {
    if (this.stopped) return // the abort on stop is not news
    const err = e instanceof MusterError ? e : new MusterError('internal', (e as Error)?.message ?? String(e))
    // The controller says this membership is over (revoked, or its secret superseded by a rotate): the sessions
    // vouched under it end at once, on every Platform of this office (the store says so), not in 12 hours.
    if ((err.code === 'federation-token-revoked' || err.code === 'federation-refused') && !this.endedRecorded) {
      const reason = err.code === 'federation-token-revoked' ? 'revoked by the controller' : 'refused by the controller: its token was rotated or removed'
      await this.lease.fenced((t) => markMembershipEnded(t, this.config.fingerprint, reason, this.fed.ctx.now())).then(
        () => (this.endedRecorded = true),
        (x) => log.error(`federation: cannot record that the controller ended this membership: ${(x as Error).message}`),
      )
    }
    const next: LinkState =
      err.code === 'federation-token-revoked' ? 'revoked' : err.code === 'platform-unreachable' || err.retryable ? 'unreachable' : 'refused'
    // Log on a change of state only: an office cut off for a month should not fill its log.
    if (next !== this.state) {
      const say = next === 'unreachable' ? log.warn : log.error
      say(`federation: controller ${this.config.controllerUrl}: ${err.message}${next === 'revoked' ? ' This office keeps running its projects.' : ''}`)
    }
    this.state = next
  }
}
