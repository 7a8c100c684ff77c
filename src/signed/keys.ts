// The trust keys a signed document or request is checked against: the one
// window rule (from notBefore, included, to notAfter, excluded) and what a
// node accepts as its set of keys. Used by the Agent, the Platform's local
// node and `muster doctor` alike.
import type { TrustKey } from '../wire/nodes.ts'

const MAX_KEYS = 32
const KID = /^[A-Za-z0-9_-]{1,64}$/
const B64URL_32 = /^[A-Za-z0-9_-]{43}$/

const isTime = (s: unknown): s is string => typeof s === 'string' && s.length <= 40 && Number.isFinite(Date.parse(s))

/** Whether `now` lies in the key's window. */
export function validAt(k: TrustKey, now: number): boolean {
  return Date.parse(k.notBefore) <= now && now < Date.parse(k.notAfter)
}

/** Keys whose window holds `now`. */
export function keysValidAt(keys: readonly TrustKey[], now: number): TrustKey[] {
  return keys.filter((k) => validAt(k, now))
}

/**
 * A well-formed trust set holding at least one key valid now, with expired
 * keys dropped; anything else throws with the reason.
 */
export function checkTrustSet(value: unknown, now: number): TrustKey[] {
  if (!Array.isArray(value) || value.length === 0) throw new Error('no keys in the answer')
  if (value.length > MAX_KEYS) throw new Error(`more than ${MAX_KEYS} keys`)
  const keys: TrustKey[] = []
  for (const k of value as Record<string, unknown>[]) {
    if (!k || typeof k !== 'object') throw new Error('a key is not an object')
    const { kid, publicKey, notBefore, notAfter } = k
    if (typeof kid !== 'string' || !KID.test(kid)) throw new Error('a key has no valid kid')
    if (typeof publicKey !== 'string' || !B64URL_32.test(publicKey) || Buffer.from(publicKey, 'base64url').length !== 32) throw new Error(`key ${kid}: not a 32-byte Ed25519 public key`)
    if (!isTime(notBefore) || !isTime(notAfter) || Date.parse(notBefore) >= Date.parse(notAfter)) throw new Error(`key ${kid}: invalid validity window`)
    if (keys.some((o) => o.kid === kid)) throw new Error(`key ${kid} appears twice`)
    keys.push({ kid, publicKey, notBefore, notAfter })
  }
  const live = keys.filter((k) => Date.parse(k.notAfter) > now)
  if (keysValidAt(live, now).length === 0) throw new Error('no key in the answer is valid now')
  return live
}
