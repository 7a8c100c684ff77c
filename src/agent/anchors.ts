// What the Platform tells a node about authenticating it from now on
// (docs/security.md), in its enroll and trust answers: the CA pin to keep, every
// pin to accept, and the API URL. Those answers arrive over a connection the
// node's current pin authenticated, so the node may take them: that is how a
// node joined under the old listener certificate moves to the CA pin, and how
// it learns a CA replacement before it is used.
import { isLoopback } from '../addresses.ts'
import { spkiPin } from '../crypto/ca.ts'
import { certFingerprint } from '../crypto/x509.ts'
import { log } from '../log.ts'
import type { AgentConfig, PlatformPin } from './files.ts'

const PIN = /^sha256:[0-9a-f]{64}$/
const MAX_PINS = 8

export interface Anchors {
  caFingerprint?: unknown
  pins?: unknown
  platformUrl?: unknown
  insecureNodeTraffic?: unknown
}

/** The pins of an answer, the CA pin first; null when the answer has none usable. */
function pinsFrom(a: Anchors): string[] | null {
  if (typeof a.caFingerprint !== 'string' || !PIN.test(a.caFingerprint)) return null
  const rest = Array.isArray(a.pins) ? a.pins.filter((p): p is string => typeof p === 'string' && PIN.test(p)) : []
  return [...new Set([a.caFingerprint, ...rest])].slice(0, MAX_PINS)
}

/** What a CA file pins: its certificate's own fingerprint and its key. */
function caFilePins(caPem: string): string[] {
  try {
    return [certFingerprint(caPem), spkiPin(caPem)]
  } catch {
    return []
  }
}

const samePin = (a: PlatformPin, b: PlatformPin) => JSON.stringify(a) === JSON.stringify(b)

/** The pin to keep after this answer (the current one when nothing changes). */
export function nextPin(current: PlatformPin, a: Anchors): PlatformPin {
  const pins = pinsFrom(a)
  if (!pins) return current
  const [ca, ...also] = pins as [string, ...string[]]
  const wanted: PlatformPin = also.length > 0 ? { fingerprint: ca, also } : { fingerprint: ca }
  if ('fingerprint' in current) return wanted
  // A CA file that is this Platform's CA, or its old listener certificate, becomes pins: they follow a replacement.
  if ('caPem' in current && caFilePins(current.caPem).some((p) => pins.includes(p))) return wanted
  return current
}

/** The API URL to use after this answer: only https, or plain http on this machine or where the operator allowed it. */
export function nextPlatformUrl(current: string, a: Anchors): string {
  if (typeof a.platformUrl !== 'string') return current
  let u: URL
  try {
    u = new URL(a.platformUrl)
  } catch {
    return current
  }
  if (u.origin === current || u.username || u.password) return current
  if (u.protocol === 'https:' || (u.protocol === 'http:' && (isLoopback(u.hostname) || a.insecureNodeTraffic === true))) return u.origin
  log.warn(`the Platform gives its API as ${u.origin}: plain http to another machine is refused; keeping ${current}`)
  return current
}

/** The configuration after an answer, and what changed (empty when nothing did). */
export function applyAnchors(config: AgentConfig, a: Anchors): { config: AgentConfig; changes: string[] } {
  const pin = nextPin(config.pin, a)
  const platformUrl = nextPlatformUrl(config.platformUrl, a)
  const changes: string[] = []
  if (!samePin(pin, config.pin)) changes.push(`pins ${'fingerprint' in pin ? [pin.fingerprint, ...(pin.also ?? [])].join(', ') : 'unchanged'}`)
  if (platformUrl !== config.platformUrl) changes.push(`API ${platformUrl}`)
  return { config: changes.length > 0 ? { ...config, pin, platformUrl } : config, changes }
}
