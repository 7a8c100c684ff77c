// The node's trust keys (docs/nodes.md): what counts as a usable set, and the
// refresh that replaces the set only with one that holds a key valid now, so
// a failed or hostile answer never leaves the node trusting nothing.
import type { DataDir } from '../datadir.ts'
import { MusterError } from '../errors.ts'
import { checkTrustSet } from '../signed/keys.ts'
import type { TrustKey } from '../wire/nodes.ts'
import { log } from '../log.ts'
import { enrollmentClient } from './connect.ts'
import { applyAnchors, type Anchors } from './anchors.ts'
import { readTrustFile, writeAgentConfig, writeTrustFile, type AgentConfig } from './files.ts'
import { learnReleaseKeys } from './update/release-keys.ts'

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
