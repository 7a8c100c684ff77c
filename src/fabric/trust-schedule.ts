// The trust-key schedule (docs/security.md) as pure functions of (keys, now), so a
// restart at any moment keeps it and several Platforms sharing the keys agree.
//
//   - Each key is valid 2 years and signs for its first year.
//   - Its successor is created 90 days (never less than 60) before it starts
//     signing, so every node has it well before a signature by it arrives; the
//     old key keeps verifying until it expires.
//   - A Platform that was off too long to give that notice (no key valid now,
//     or the signing key ends within 60 days) makes a key that signs at once;
//     nodes meet an unknown kid and refresh (docs/security.md).
const DAY_MS = 86_400_000
export const YEAR_MS = 365 * DAY_MS
export const KEY_LIFETIME_MS = 2 * YEAR_MS
export const SIGNING_MS = YEAR_MS
/** The successor is created this long before it starts signing. */
export const PUBLISH_LEAD_MS = 90 * DAY_MS
/** … and never less than this long before. */
export const MIN_NOTICE_MS = 60 * DAY_MS
/** A key shorter-lived than 2 years (made by an earlier version) hands over this long before it expires. */
export const HANDOVER_MS = 30 * DAY_MS
/** A new key signs only once it has been valid this long, so a node whose clock is a little behind accepts it. */
export const SKEW_MS = 5 * 60_000

export interface KeyDates {
  kid: string
  notBefore: string
  notAfter: string
}

const nb = (k: KeyDates) => Date.parse(k.notBefore)
const na = (k: KeyDates) => Date.parse(k.notAfter)

/** Keys valid at `now` that have signed (or may sign) by now, newest first; ties by kid. */
function started<T extends KeyDates>(keys: readonly T[], now: number): T[] {
  const live = keys.filter((k) => nb(k) <= now && now < na(k))
  const settled = live.filter((k) => nb(k) <= now - SKEW_MS)
  return (settled.length > 0 ? settled : live).sort((a, b) => nb(b) - nb(a) || (a.kid < b.kid ? -1 : a.kid > b.kid ? 1 : 0))
}

/** The key that signs at `now`: the most recently started key still valid. Undefined when none is. */
export function signingKey<T extends KeyDates>(keys: readonly T[], now: number): T | undefined {
  return started(keys, now)[0]
}

export interface TrustPlan {
  /** The kid that signs now (after `create`, when it says `signsNow`). */
  signer: string | undefined
  /** Keys that have expired: drop them. */
  expired: string[]
  /** A key to create now, and the window it gets. */
  create?: { notBefore: number; notAfter: number; why: 'first key' | 'successor' | 'no key can sign with notice' }
}

/** When the key signing at `now` hands over (its successor's start, else when one is due to start); undefined when none signs. */
export function rotationAt(keys: readonly KeyDates[], now: number): number | undefined {
  const live = keys.filter((k) => na(k) > now)
  const current = signingKey(live, now)
  if (!current) return undefined
  const next = live.filter((k) => nb(k) > nb(current)).sort((a, b) => nb(a) - nb(b))[0]
  return next ? nb(next) : Math.min(nb(current) + SIGNING_MS, na(current) - HANDOVER_MS)
}

/** What the schedule asks for at `now`. */
export function planTrustKeys(keys: readonly KeyDates[], now: number): TrustPlan {
  const expired = keys.filter((k) => na(k) <= now).map((k) => k.kid)
  const live = keys.filter((k) => na(k) > now)
  const current = signingKey(live, now)
  const immediate = (why: 'first key' | 'no key can sign with notice'): TrustPlan => ({
    signer: current?.kid,
    expired,
    create: { notBefore: now, notAfter: now + KEY_LIFETIME_MS, why },
  })
  if (!current) return immediate(live.length === 0 && keys.length === 0 ? 'first key' : 'no key can sign with notice')
  const successor = live.find((k) => nb(k) > nb(current))
  if (successor) return { signer: current.kid, expired }
  const due = Math.min(nb(current) + SIGNING_MS, na(current) - HANDOVER_MS)
  if (now < due - PUBLISH_LEAD_MS) return { signer: current.kid, expired }
  const start = Math.max(due, now + MIN_NOTICE_MS)
  // The current key must still verify when its successor takes over.
  if (start + SKEW_MS >= na(current)) return immediate('no key can sign with notice')
  return { signer: current.kid, expired, create: { notBefore: start, notAfter: start + KEY_LIFETIME_MS, why: 'successor' } }
}
