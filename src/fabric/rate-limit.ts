// Token-bucket rate limits with a cap on requests in flight. Each kind of
// request (enroll, heartbeat, trust) has its own, so a flood of one cannot
// starve another. They run on the Platform's clock.
import type { RateLimitOptions } from '../context/options.ts'
import { MusterError } from '../errors.ts'

export class RateLimiter {
  private tokens: number
  private last: number
  private inFlight = 0

  constructor(
    readonly name: string,
    private readonly opts: RateLimitOptions,
    private readonly now: () => number = Date.now,
  ) {
    this.tokens = opts.burst
    this.last = now()
  }

  /** Requests admitted and not yet released. */
  get active(): number {
    return this.inFlight
  }

  /** Admits one request or throws 429 rate-limited with Retry-After; call the returned release when done. */
  admit(): () => void {
    this.enter()
    let released = false
    return () => {
      if (!released) {
        released = true
        this.inFlight--
      }
    }
  }

  /** admit() without the release closure (the heartbeat path): call leave() when done. */
  enter(): void {
    const now = this.now()
    // A clock that steps back (NTP, a test) neither drains the bucket nor refills it twice.
    if (now > this.last) {
      this.tokens = Math.min(this.opts.burst, this.tokens + ((now - this.last) / 1000) * this.opts.perSecond)
      this.last = now
    }
    if (this.inFlight >= this.opts.maxInFlight) throw this.refusal(1)
    if (this.tokens < 1) throw this.refusal((1 - this.tokens) / this.opts.perSecond)
    this.tokens -= 1
    this.inFlight++
  }

  leave(): void {
    this.inFlight--
  }

  private refusal(seconds: number): MusterError {
    return new MusterError('rate-limited', `Too many ${this.name} requests; retry later.`, { retryAfterSeconds: Math.max(1, Math.ceil(seconds)) })
  }
}
