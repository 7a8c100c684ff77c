// The node's trust keys (SPEC §7): what counts as a usable set, and the
// refresh that replaces the set only with one that holds a key valid now, so
// a failed or hostile answer never leaves the node trusting nothing.
import type { DataDir } from '../datadir.ts'
import { MusterError } from '../errors.ts'
import type { TrustKey } from '../fabric/trust-keys.ts'
import { log } from '../log.ts'
import { enrollmentClient } from './connect.ts'
import { applyAnchors, type Anchors } from './anchors.ts'
import { readTrustFile, writeAgentConfig, writeTrustFile, type AgentConfig } from './files.ts'
import { learnReleaseKeys } from './update/release-keys.ts'

const MAX_KEYS = 32
const KID = /^[A-Za-z0-9_-]{1,64}$/
const B64URL_32 = /^[A-Za-z0-9_-]{43}$/

const isTime = (s: unknown): s is string => typeof s === 'string' && s.length <= 40 && Number.isFinite(Date.parse(s))

/** Keys whose window holds `now`. */
export function keysValidAt(keys: TrustKey[], now: number): TrustKey[] {
  return keys.filter((k) => Date.parse(k.notBefore) <= now && now < Date.parse(k.notAfter))
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

export interface TrustChange {
  added: string[]
  removed: string[]
  keys: TrustKey[]
  /** The configuration after the answer (pins, API URL). */
  config: AgentConfig
  /** What changed in it. */
  changes: string[]
}

export function diffTrust(before: TrustKey[], after: TrustKey[]): { added: string[]; removed: string[] } {
  const had = new Set(before.map((k) => k.kid))
  const has = new Set(after.map((k) => k.kid))
  return { added: after.filter((k) => !had.has(k.kid)).map((k) => k.kid), removed: before.filter((k) => !has.has(k.kid)).map((k) => k.kid) }
}

/**
 * Asks the Platform for its trust keys over the pinned enrollment connection
 * and rewrites worker/trust.json with a usable answer; takes the pins and API
 * URL the answer carries into worker/agent.json. Throws (leaving both files
 * alone) when the Platform cannot be asked or answers something unusable.
 */
export async function refreshTrust(dataDir: DataDir, config: AgentConfig, now: number, via = config.enrollmentUrl): Promise<TrustChange> {
  let answer: { trustKeys?: unknown } & Anchors
  try {
    // `via`: another Platform's listener sharing the store (same pin); the node's own enrollment URL is kept.
    answer = await enrollmentClient({ ...config, enrollmentUrl: via }).nodes.trust()
  } catch (e) {
    throw new MusterError('platform-unreachable', `Could not ask ${via} for trust keys: ${(e as Error).message}`)
  }
  let keys: TrustKey[]
  try {
    keys = checkTrustSet(answer?.trustKeys, now)
  } catch (e) {
    throw new MusterError('invalid-request', `The Platform's trust-key answer was refused (${(e as Error).message}); the current keys stay in place.`)
  }
  const before = readTrustFile(dataDir)?.keys ?? []
  const diff = diffTrust(before, keys)
  writeTrustFile(dataDir, keys, now)
  learnReleaseKeys(dataDir, (answer as { releaseKeys?: unknown } | undefined)?.releaseKeys)
  if (diff.added.length || diff.removed.length) log.info(`trust keys updated: added ${diff.added.join(', ') || 'none'}; removed ${diff.removed.join(', ') || 'none'}`)
  const next = applyAnchors(config, answer ?? {})
  if (next.changes.length > 0) {
    writeAgentConfig(dataDir, next.config)
    log.info(`the Platform is now authenticated with: ${next.changes.join('; ')}`)
  }
  return { ...diff, keys, ...next }
}
