// Digests of the secrets the store finds rows by (API tokens, sessions, join
// tokens, federation office tokens): HMAC-SHA256 under a key derived from
// platform/master.key, over the secret's SHA-256 (docs/security.md). A row
// written by someone who can write the store but has no master.key — the
// plain SHA-256 of a secret they chose — authenticates nothing.
//   stored = "k1:" + hex(HMAC-SHA256(HKDF(master.key, "muster token digest v1"), hex(SHA-256(secret))))
// Keying the SHA-256 (not the secret) lets the one-time upgrade re-key rows
// that older versions wrote (src/store/token-digests.ts) without their secrets.
import { createHmac } from 'node:crypto'
import { deriveKey, sha256Hex } from './tokens.ts'

const PURPOSE = 'muster token digest v1'
/** Marks a keyed digest; a row without it was written unkeyed and matches no secret. */
export const KEYED_PREFIX = 'k1:'

/** The digest function of one Platform: the same secret gives the same digest on every Platform with this master key. */
export type TokenDigest = (secret: string) => string

/** The key itself, for the upgrade that re-keys rows (src/store/token-digests.ts). */
export function tokenDigestKey(masterKey: Uint8Array): Uint8Array {
  return deriveKey(masterKey, PURPOSE)
}

/** A stored unkeyed digest (hex SHA-256 of the secret), keyed. */
export function keyedDigest(key: Uint8Array, sha256HexOfSecret: string): string {
  return KEYED_PREFIX + createHmac('sha256', key).update(sha256HexOfSecret).digest('hex')
}

export function tokenDigest(key: Uint8Array, secret: string): string {
  return keyedDigest(key, sha256Hex(secret))
}

export function tokenDigester(masterKey: Uint8Array): TokenDigest {
  const key = tokenDigestKey(masterKey)
  return (secret) => tokenDigest(key, secret)
}
