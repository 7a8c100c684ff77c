// The release keys this node trusts (worker/release-keys.json): learned with
// the trust keys (join, then every trust refresh) and kept. A key joins only
// when one already held endorsed it; a node that holds none takes the first
// key the Platform names, on first use, over the connection its pin
// authenticated (docs/upgrading.md). Nothing the Platform says removes a key.
import type { DataDir } from '../../datadir.ts'
import { log } from '../../log.ts'
import { acceptReleaseKeys, isReleaseKey, type ReleaseKey } from '../../signed/releases.ts'

export const RELEASE_KEYS_FILE = 'worker/release-keys.json'

export function readReleaseKeys(dataDir: DataDir): ReleaseKey[] {
  try {
    const v = JSON.parse(dataDir.readSecretText(RELEASE_KEYS_FILE) ?? '{}') as { keys?: unknown }
    return Array.isArray(v.keys) ? v.keys.filter(isReleaseKey) : []
  } catch {
    return []
  }
}

/** Takes what `offered` may add (a trust or enroll answer's `releaseKeys`); the keys held after. */
export function learnReleaseKeys(dataDir: DataDir, offered: unknown): ReleaseKey[] {
  const held = readReleaseKeys(dataDir)
  const r = acceptReleaseKeys(held, offered)
  if (r.added.length > 0) {
    dataDir.writeSecret(RELEASE_KEYS_FILE, `${JSON.stringify({ keys: r.keys }, null, 2)}\n`)
    log.info(`release keys: ${held.length === 0 ? 'first key' : 'endorsed key'} ${r.added.join(', ')} trusted from now on`)
  }
  if (r.refused.length > 0) log.warn(`release keys: the Platform names ${r.refused.join(', ')}, which no key this node trusts endorsed; ignored`)
  return r.keys
}
