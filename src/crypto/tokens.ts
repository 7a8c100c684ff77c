// Random secrets, digests and constant-time comparison: the building blocks of
// every token format in docs/security.md.
import { sha256 } from '@noble/hashes/sha2.js'
import { hkdf } from '@noble/hashes/hkdf.js'
import { bytesToHex, utf8ToBytes } from '@noble/hashes/utils.js'
import { createHash, timingSafeEqual } from 'node:crypto'

export function randomBytes(n = 32): Uint8Array {
  return crypto.getRandomValues(new Uint8Array(n))
}

export function b64url(bytes: Uint8Array): string {
  return Buffer.from(bytes).toString('base64url')
}

export function fromB64url(text: string): Uint8Array {
  return new Uint8Array(Buffer.from(text, 'base64url'))
}

/** 32 random bytes, base64url without padding. */
export function randomSecret(): string {
  return b64url(randomBytes(32))
}

const BASE32 = 'abcdefghijklmnopqrstuvwxyz234567'

/** A public identifier: `length` lowercase base32 characters. */
export function randomId(length = 16): string {
  const bytes = randomBytes(length)
  let out = ''
  for (const b of bytes) out += BASE32[b & 31]
  return out
}

// The runtime's SHA-256 (BoringSSL): a certificate digest on every enroll, a token digest on every call.
export function sha256Hex(data: string | Uint8Array): string {
  return createHash('sha256').update(data).digest('hex')
}

export function sha256Bytes(data: string | Uint8Array): Uint8Array {
  return new Uint8Array(createHash('sha256').update(data).digest())
}

/** A 32-byte key derived from the master key for one named purpose. */
export function deriveKey(master: Uint8Array, purpose: string): Uint8Array {
  return hkdf(sha256, master, undefined, utf8ToBytes(purpose), 32)
}

/** Constant-time equality of two strings (hex digests, macs). */
export function safeEqual(a: string, b: string): boolean {
  const ab = Buffer.from(a)
  const bb = Buffer.from(b)
  if (ab.length !== bb.length) {
    timingSafeEqual(ab, ab)
    return false
  }
  return timingSafeEqual(ab, bb)
}

export { bytesToHex, utf8ToBytes }
