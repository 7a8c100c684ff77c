// The token bucket on an injected clock: burst, refill, a clock stepping back, requests in flight.
import { describe, expect, test } from 'bun:test'
import { RateLimiter } from '../../src/fabric/rate-limit.ts'

const refused = (l: RateLimiter) => {
  try {
    l.admit()
    return null
  } catch (e) {
    return (e as { code: string; detail: { retryAfterSeconds: number } })
  }
}

describe('rate limiter', () => {
  test('a burst, then one request per refill interval of the injected clock', () => {
    let now = 1_000_000
    const l = new RateLimiter('enroll', { perSecond: 2, burst: 3, maxInFlight: 100 }, () => now)
    for (let i = 0; i < 3; i++) l.admit()()
    expect(refused(l)).toMatchObject({ code: 'rate-limited', detail: { retryAfterSeconds: 1 } })
    now += 499
    expect(refused(l)).not.toBeNull()
    now += 1 // half a second: one more at two per second
    l.admit()()
    expect(refused(l)).not.toBeNull()
    now += 60_000 // a long pause refills the burst, no more
    for (let i = 0; i < 3; i++) l.admit()()
    expect(refused(l)).not.toBeNull()
  })

  test('a clock stepping back neither drains the bucket nor refills it twice', () => {
    let now = 1_000_000
    const l = new RateLimiter('heartbeat', { perSecond: 1, burst: 2, maxInFlight: 100 }, () => now)
    l.admit()()
    now -= 15 * 60_000
    l.admit()() // the second of the burst is still there
    expect(refused(l)).not.toBeNull()
    now += 15 * 60_000 // back to where it was: nothing has been earned meanwhile
    expect(refused(l)).not.toBeNull()
    now += 1000
    l.admit()()
  })

  test('requests in flight are capped, and each release frees one place once', () => {
    const l = new RateLimiter('trust', { perSecond: 1000, burst: 1000, maxInFlight: 2 }, () => 0)
    const a = l.admit()
    l.admit()
    expect(refused(l)).toMatchObject({ code: 'rate-limited' })
    a()
    a() // a second release of the same request frees nothing more
    l.admit()
    expect(refused(l)).not.toBeNull()
  })
})
