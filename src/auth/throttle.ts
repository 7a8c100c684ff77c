// Password-guessing brakes (docs/security.md): after 5 failed logins for one account
// or from one address within 5 minutes, POST /login answers 429 with
// Retry-After whatever the password, for 1 minute, doubling with each lockout
// up to 15 minutes. A success resets the account and the failures it caused.
// In memory, per Platform: a restart forgets it, as it forgets rate limits.
import { MusterError } from '../errors.ts'

export interface ThrottleOptions {
  maxFailures: number
  windowMs: number
  firstLockMs: number
  maxLockMs: number
  /** Keys kept at most (the oldest idle ones go first); bounds memory under a flood of names. */
  maxKeys: number
}

export const LOGIN_THROTTLE: ThrottleOptions = { maxFailures: 5, windowMs: 5 * 60_000, firstLockMs: 60_000, maxLockMs: 15 * 60_000, maxKeys: 20_000 }

interface KeyState {
  /** Failures in the window: when, and for which account (an address's failures can be for many). */
  failures: { at: number; account: string }[]
  lockedUntil: number
  /** Lockouts so far; each doubles the next. Forgotten after a quiet maxLockMs. */
  lockouts: number
  /** Attempts being checked now: they count against the limit until they end, so parallel guesses gain nothing. */
  pending: number
}

export class LoginThrottle {
  private readonly keys = new Map<string, KeyState>()

  constructor(
    private readonly now: () => number,
    private readonly opts: ThrottleOptions = LOGIN_THROTTLE,
  ) {}

  /**
   * Starts an attempt: the seconds to wait when the account or the address is
   * locked out (or its last allowed attempts are still being checked), else 0
   * and the attempt counts as pending until `end`.
   */
  begin(account: string, address: string): number {
    const now = this.now()
    const states = [accountKey(account), addressKey(address)].map((k) => this.state(k) ?? this.create(k))
    const until = Math.max(...states.map((s) => s.lockedUntil))
    if (until > now) return Math.ceil((until - now) / 1000)
    if (states.some((s) => this.recent(s).length + s.pending >= this.opts.maxFailures)) return 1
    for (const s of states) s.pending++
    return 0
  }

  /** Ends an attempt begun with `begin`: a failure counts; a success resets the account and the address's failures for it (not for others). */
  end(account: string, address: string, ok: boolean): void {
    const keys = [accountKey(account), addressKey(address)]
    for (const k of keys) {
      const s = this.keys.get(k)
      if (s) s.pending = Math.max(0, s.pending - 1)
    }
    if (!ok) {
      for (const k of keys) this.failOne(k, account)
      return
    }
    const a = this.keys.get(keys[0]!)
    if (a) Object.assign(a, { failures: [], lockouts: 0 })
    const b = this.keys.get(keys[1]!)
    if (b) b.failures = b.failures.filter((f) => f.account !== account)
  }

  private recent(s: KeyState): KeyState['failures'] {
    const now = this.now()
    return (s.failures = s.failures.filter((f) => now - f.at < this.opts.windowMs))
  }

  private failOne(key: string, account: string): void {
    const now = this.now()
    const s = this.state(key) ?? this.create(key)
    this.recent(s).push({ at: now, account })
    if (s.failures.length < this.opts.maxFailures) return
    s.lockedUntil = now + Math.min(this.opts.maxLockMs, this.opts.firstLockMs * 2 ** s.lockouts)
    s.lockouts++
    s.failures = []
  }

  /** The state of a key, forgotten once nothing about it matters any more. */
  private state(key: string): KeyState | undefined {
    const s = this.keys.get(key)
    if (s && this.idle(s)) {
      this.keys.delete(key)
      return undefined
    }
    return s
  }

  private idle(s: KeyState): boolean {
    if (s.pending > 0) return false
    const now = this.now()
    const last = Math.max(s.lockedUntil + (s.lockouts > 0 ? this.opts.maxLockMs : 0), ...s.failures.map((f) => f.at + this.opts.windowMs))
    return last <= now
  }

  private create(key: string): KeyState {
    if (this.keys.size >= this.opts.maxKeys) {
      for (const [k, s] of this.keys) if (this.idle(s)) this.keys.delete(k)
      // Still full: drop the oldest entries (insertion order) rather than grow.
      for (const k of this.keys.keys()) {
        if (this.keys.size < this.opts.maxKeys) break
        this.keys.delete(k)
      }
    }
    const s: KeyState = { failures: [], lockedUntil: 0, lockouts: 0, pending: 0 }
    this.keys.set(key, s)
    return s
  }
}

const accountKey = (account: string) => `account:${account}`

/** IPv6 peers are counted by /64: one host usually holds a whole /64. */
export function addressKey(address: string): string {
  const v6 = address.includes(':') && !/^::ffff:\d+\.\d+\.\d+\.\d+$/i.test(address)
  if (!v6) return `address:${address.replace(/^::ffff:/i, '')}`
  const [head = '', tail] = address.toLowerCase().split('::')
  const h = head ? head.split(':') : []
  const t = tail === undefined ? [] : tail ? tail.split(':') : []
  const groups = [...h, ...new Array<string>(Math.max(0, 8 - h.length - t.length)).fill('0'), ...t]
  return `address:${groups.slice(0, 4).map((g) => g.replace(/^0+(?=.)/, '')).join(':')}::/64`
}

/**
 * One login attempt under the throttle: refused with 429 while the account or
 * the address is locked out (the password is not even checked); a refusal
 * counts as a failure, a success resets.
 */
export async function throttledLogin<T extends { account: string }>(throttle: LoginThrottle, address: string, identifier: string, attempt: () => Promise<T>): Promise<T> {
  const wait = throttle.begin(identifier, address)
  if (wait > 0) throw new MusterError('rate-limited', 'Too many failed logins; retry later.', { retryAfterSeconds: wait })
  let ok = false
  try {
    const r = await attempt()
    ok = true
    return r
  } finally {
    throttle.end(identifier, address, ok)
  }
}
