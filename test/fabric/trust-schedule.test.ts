// The trust-key schedule as a pure function of (keys, now) (docs/security.md):
// simulated over years with ticks of any spacing, restarts anywhere, and long
// outages.
import { describe, expect, test } from 'bun:test'
import { KEY_LIFETIME_MS, MIN_NOTICE_MS, planTrustKeys, signingKey, SKEW_MS, type KeyDates } from '../../src/fabric/trust-schedule.ts'

const DAY = 86_400_000
const YEAR = 365 * DAY
const T0 = Date.parse('2030-01-01T00:00:00Z')

interface SimKey extends KeyDates {
  createdAt: number
}

const iso = (t: number) => new Date(t).toISOString()

/** Applies the plan at `now` (what the Platform does on each tick or restart). */
function apply(keys: SimKey[], now: number, ids: { n: number }): SimKey[] {
  const plan = planTrustKeys(keys, now)
  let next = keys.filter((k) => !plan.expired.includes(k.kid))
  if (plan.create) next = [...next, { kid: `k${String(++ids.n).padStart(3, '0')}`, notBefore: iso(plan.create.notBefore), notAfter: iso(plan.create.notAfter), createdAt: now }]
  return next
}

/** Runs the schedule from T0 for `years`, ticking at the given times; records who signed when. */
function simulate(ticks: number[]) {
  const ids = { n: 0 }
  let keys: SimKey[] = []
  const all = new Map<string, SimKey>()
  const signedAt = new Map<string, number[]>()
  for (const now of ticks) {
    keys = apply(keys, now, ids)
    for (const k of keys) all.set(k.kid, k)
    const s = signingKey(keys, now)
    expect(s).toBeDefined()
    signedAt.set(s!.kid, [...(signedAt.get(s!.kid) ?? []), now])
    // every key that has not expired is still published, so what it signed still verifies
    for (const k of all.values()) expect(keys.some((x) => x.kid === k.kid)).toBe(Date.parse(k.notAfter) > now)
  }
  return { all: [...all.values()], signedAt }
}

const every = (stepMs: number, years: number, offset = 0) => Array.from({ length: Math.floor((years * YEAR) / stepMs) }, (_, i) => T0 + offset + i * stepMs)

describe('trust-key schedule', () => {
  test('over six years: each key valid 2 years, signs in its first year only, published at least 60 days before it signs', () => {
    const { all, signedAt } = simulate(every(DAY, 6))
    expect(all.length).toBeGreaterThanOrEqual(6)
    for (const k of all) {
      const nb = Date.parse(k.notBefore)
      expect(Date.parse(k.notAfter) - nb).toBe(KEY_LIFETIME_MS)
      const times = signedAt.get(k.kid) ?? []
      if (times.length === 0) continue
      expect(Math.min(...times)).toBeGreaterThanOrEqual(nb)
      expect(Math.max(...times)).toBeLessThan(nb + YEAR + SKEW_MS + DAY)
      if (k.kid !== 'k001') expect(nb - k.createdAt).toBeGreaterThanOrEqual(MIN_NOTICE_MS)
    }
    // the handover is seamless: each key starts signing exactly when its predecessor's year ends
    const starts = all.map((k) => Date.parse(k.notBefore)).sort((a, b) => a - b)
    for (let i = 1; i < starts.length; i++) expect(starts[i]! - starts[i - 1]!).toBe(YEAR)
  })

  test('the same windows whatever the ticks: daily, weekly, every 29 days, or restarts at odd moments', () => {
    const windows = (ticks: number[]) => simulate(ticks).all.map((k) => `${k.notBefore}/${k.notAfter}`)
    const daily = windows(every(DAY, 5))
    expect(windows(every(7 * DAY, 5))).toEqual(daily)
    expect(windows(every(29 * DAY, 5))).toEqual(daily)
    const odd = [T0, ...every(DAY, 5).filter((_, i) => (i * 7919) % 13 === 0)]
    expect(windows(odd)).toEqual(daily)
  })

  test('the choice is a function of the keys and the time only: any order, any Platform, same signer', () => {
    const { all } = simulate(every(DAY, 4))
    for (let t = T0; t < T0 + 4 * YEAR; t += 17 * DAY) {
      const live = all.filter((k) => Date.parse(k.notAfter) > t && Date.parse(k.notBefore) - 90 * DAY <= t)
      const a = signingKey(live, t)?.kid
      expect(signingKey([...live].reverse(), t)?.kid).toBe(a)
      expect(signingKey([...live].sort(() => 0.5 - ((t / DAY) % 2)), t)?.kid).toBe(a)
      expect(planTrustKeys([...live].reverse(), t)).toEqual(planTrustKeys(live, t))
    }
  })

  test('a new key signs only after a few minutes, so nodes whose clocks lag a little accept it', () => {
    const k1 = { kid: 'a', notBefore: iso(T0), notAfter: iso(T0 + 2 * YEAR) }
    const k2 = { kid: 'b', notBefore: iso(T0 + YEAR), notAfter: iso(T0 + 3 * YEAR) }
    expect(signingKey([k1, k2], T0 + YEAR)?.kid).toBe('a')
    expect(signingKey([k1, k2], T0 + YEAR + SKEW_MS)?.kid).toBe('b')
  })

  test('off for 400 days from mid-year: the old key still verifies and keeps signing until a successor has had 60 days of notice', () => {
    const ids = { n: 0 }
    let keys = apply([], T0, ids)
    keys = apply(keys, T0 + 200 * DAY, ids)
    expect(keys).toHaveLength(1)
    const back = T0 + 600 * DAY
    keys = apply(keys, back, ids)
    expect(keys).toHaveLength(2)
    expect(Date.parse(keys[1]!.notBefore)).toBe(back + MIN_NOTICE_MS)
    expect(signingKey(keys, back)?.kid).toBe('k001')
    expect(signingKey(keys, back + MIN_NOTICE_MS + SKEW_MS)?.kid).toBe('k002')
  })

  test('off for years: every key expired, so the Platform makes one that signs at once', () => {
    const ids = { n: 0 }
    let keys = apply([], T0, ids)
    const back = T0 + 3 * YEAR
    const plan = planTrustKeys(keys, back)
    expect(plan.expired).toEqual(['k001'])
    expect(plan.create).toEqual({ notBefore: back, notAfter: back + KEY_LIFETIME_MS, why: 'no key can sign with notice' })
    keys = apply(keys, back, ids)
    expect(signingKey(keys, back)?.kid).toBe('k002')
  })

  test('off for years, asked directly: a key past its notAfter never signs, even as the newest; one valid key still does', () => {
    // planTrustKeys drops expired keys before it chooses; signingKey must not rely on that.
    const old = { kid: 'old', notBefore: iso(T0), notAfter: iso(T0 + KEY_LIFETIME_MS) }
    const newer = { kid: 'newer', notBefore: iso(T0 + YEAR), notAfter: iso(T0 + YEAR + DAY) }
    const back = T0 + 3 * YEAR
    expect(signingKey([old, newer], back)).toBeUndefined()
    // the newest key expired yesterday; the older one is still valid and signs
    expect(signingKey([old, newer], T0 + YEAR + 2 * DAY)?.kid).toBe('old')
    // both edges: valid from notBefore (once settled), never at notAfter itself
    expect(signingKey([old], T0 + SKEW_MS)?.kid).toBe('old')
    expect(signingKey([old], T0 + KEY_LIFETIME_MS - 1)?.kid).toBe('old')
    expect(signingKey([old], T0 + KEY_LIFETIME_MS)).toBeUndefined()
    expect(signingKey([old], T0 - 1)).toBeUndefined()
  })

  test('keys made by the earlier version (1 year) hand over 30 days before they expire, announced 90 days earlier', () => {
    const old = { kid: 'old', notBefore: iso(T0), notAfter: iso(T0 + YEAR), createdAt: T0 }
    expect(planTrustKeys([old], T0 + 200 * DAY).create).toBeUndefined()
    const plan = planTrustKeys([old], T0 + 250 * DAY)
    expect(plan.create).toMatchObject({ notBefore: T0 + 335 * DAY, why: 'successor' })
    // upgraded too late to give 60 days of notice before it expires: a key that signs at once
    expect(planTrustKeys([old], T0 + 320 * DAY).create).toMatchObject({ notBefore: T0 + 320 * DAY, why: 'no key can sign with notice' })
  })
})
