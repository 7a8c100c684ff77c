// One holder for each background loop among the Platforms sharing a store
// (docs/storage-ha.md): placement, the trust-key schedule, probes, cloud reconcile and
// autoscale, audit pruning, an office's federation heartbeat.
//
// Every Platform runs one timer that renews what it holds and tries to take
// what has expired. A holder that dies (kill -9) stops renewing; its lease
// expires TTL after its last renewal and another Platform takes it at its next
// try, so takeover comes within TTL + RENEW (12 s by default, under the 15 s
// docs/storage-ha.md asks for). A clean stop gives every lease up at once.
//
// Holding a lease locally is only a hint for *whether to run* a loop (checked
// against a local monotonic deadline computed from when the renewal was sent,
// so it always ends before the database's expiry). What makes a second runner
// harmless is the fence: every leader-only write runs in `lease.write`, which
// checks holder and fence in the same transaction (src/store/leases.ts).
//
// On SQLite exactly one Platform uses the store (the serve lock), so the same
// code path takes every lease at once and always holds it.
import { MusterError } from '../errors.ts'
import { log } from '../log.ts'
import { countsLease, leaseChanges } from '../metrics/platform.ts'
import type { Db, Store } from '../store/db.ts'
import { acquireLease, checkFence, releaseLease } from '../store/leases.ts'
import { tunableNumber } from '../tunables.ts'

export type LeaseName = 'placement' | 'trust-keys' | 'probes' | 'cloud-reconcile' | 'cloud-autoscale' | 'audit-prune' | 'federation-heartbeat' | 'rollouts'

/** A lease lasts this long after its last renewal (MUSTER_LEASE_TTL_MS for tests). */
export const LEASE_TTL_MS = tunableNumber('MUSTER_LEASE_TTL_MS')

/** A leader-only write refused because this Platform no longer holds the lease. */
export class LeaseLost extends MusterError {
  constructor(readonly lease: string) {
    super('conflict', `This Platform no longer holds the ${lease} lease; another Platform does that work now.`)
  }
}

type Listener = (held: boolean) => void | Promise<void>

export class Lease {
  fence = 0
  private until = 0
  private holding = false
  private readonly listeners: Listener[] = []

  constructor(
    readonly name: LeaseName,
    private readonly owner: Leases,
  ) {}

  /** Whether this Platform should run the loop now. */
  get held(): boolean {
    return this.holding && performance.now() < this.until
  }

  /** Called (in order) when this Platform starts or stops holding the lease. */
  onChange(fn: Listener): void {
    this.listeners.push(fn)
  }

  /**
   * Runs `fn` in one transaction that first checks, in that transaction, that
   * this Platform still holds the lease with the fence it was given. Throws
   * LeaseLost (writing nothing) otherwise.
   */
  async fenced<T>(fn: (t: Db) => Promise<T>): Promise<T> {
    const { fence } = this
    return this.owner.store.tx(async (t) => {
      if (!this.holding || !(await checkFence(t, this.name, this.owner.holder, fence, this.owner.exclusive))) throw new LeaseLost(this.name)
      return fn(t)
    })
  }

  /** Runs `fn` only while held; a LeaseLost from it is expected, not an error. */
  async run(fn: () => Promise<unknown>): Promise<void> {
    if (!this.held) return
    try {
      await fn()
    } catch (e) {
      if (e instanceof LeaseLost) return
      throw e
    }
  }

  /** @internal */
  async assume(held: boolean, fence: number, until: number): Promise<void> {
    const changed = held !== this.holding || (held && fence !== this.fence)
    this.holding = held
    this.until = until
    if (held) this.fence = fence
    if (!changed) return
    leaseChanges.inc({ lease: this.name, change: held ? 'acquired' : this.owner.stopping ? 'released' : 'lost' })
    // On SQLite every lease is this Platform's (one per store): news only where Platforms share a store.
    log[this.owner.exclusive ? 'debug' : 'info'](held ? `this Platform now runs ${this.name} (lease fence ${fence})` : `this Platform no longer runs ${this.name}`)
    for (const fn of this.listeners) {
      try {
        await fn(held)
      } catch (e) {
        log.warn(`${this.name} lease: ${(e as Error).message}`)
      }
    }
  }
}

export class Leases {
  private readonly leases = new Map<LeaseName, Lease>()
  private timer: ReturnType<typeof setInterval> | undefined
  private round: Promise<void> | undefined
  private stopped = false
  readonly renewMs: number

  /** A clean stop is under way: leases given up now are released, not lost. */
  get stopping(): boolean {
    return this.stopped
  }

  constructor(
    readonly store: Store,
    /** This Platform process (its changes origin): a restart is a new holder. */
    readonly holder: string,
    readonly ttlMs = LEASE_TTL_MS,
  ) {
    this.renewMs = Math.max(50, Math.floor(ttlMs / 5))
  }

  /** SQLite: one Platform per store (the serve lock), so every lease is this Platform's. */
  get exclusive(): boolean {
    return this.store.engine === 'sqlite'
  }

  /** Every lease a service has named. */
  get all(): readonly Lease[] {
    return [...this.leases.values()]
  }

  lease(name: LeaseName): Lease {
    let l = this.leases.get(name)
    if (!l) {
      l = new Lease(name, this)
      this.leases.set(name, l)
      countsLease(name)
    }
    return l
  }

  /** Takes what it can now (so loops know their holder before they start), then keeps renewing. */
  async start(): Promise<void> {
    await this.tryAll()
    this.timer = setInterval(() => void this.tryAll(), this.renewMs)
    this.timer.unref?.()
  }

  /** One round: renew or take each lease (independently, so one slow row delays no other); rounds never overlap. */
  tryAll(): Promise<void> {
    this.round ??= Promise.all(
      [...this.leases.values()].map(async (l) => {
        if (this.stopped) return
        const sent = performance.now()
        try {
          const got = await acquireLease(this.store, l.name, this.holder, this.ttlMs, this.exclusive)
          // Held locally until TTL after the request was *sent*: never past the database's expiry.
          if (!this.stopped) await l.assume(got !== null, got?.fence ?? 0, sent + this.ttlMs - this.renewMs)
        } catch (e) {
          // The store cannot be asked: keep the local deadline, which runs out by itself.
          log.warn(`lease ${l.name}: ${(e as Error).message}`)
        }
      }),
    )
      .then(() => {})
      .finally(() => (this.round = undefined))
    return this.round
  }

  /** A clean stop: gives every held lease up, so another Platform takes over at once. */
  async stop(): Promise<void> {
    this.stopped = true
    if (this.timer) clearInterval(this.timer)
    await this.round
    for (const l of this.leases.values()) {
      if (!l.held) continue
      await l.assume(false, 0, 0)
      await releaseLease(this.store, l.name, this.holder).catch(() => {})
    }
  }
}
