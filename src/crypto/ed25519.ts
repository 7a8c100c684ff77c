// Ed25519 with a domain string in every signature (docs/security.md): trust keys,
// signed assignments, federation. The signed bytes are `domain || 0x00 ||
// message`, so nothing signed for one purpose verifies for another. Also the
// canonical JSON that structured documents are signed in.
//
// node:crypto is used because it is ~25x faster than @noble/curves here (measured on Bun 1.4);
// keys travel as raw 32-byte seeds and public keys, wrapped in fixed DER
// prefixes only for the duration of a call.
import { createPrivateKey, createPublicKey, sign, verify, type KeyObject } from 'node:crypto'
import { randomBytes, utf8ToBytes } from './tokens.ts'

// PKCS#8 PrivateKeyInfo { v0, AlgorithmIdentifier { 1.3.101.112 }, OCTET STRING { OCTET STRING seed } }
const PKCS8_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex')
// SubjectPublicKeyInfo { AlgorithmIdentifier { 1.3.101.112 }, BIT STRING key }
const SPKI_PREFIX = Buffer.from('302a300506032b6570032100', 'hex')

export interface SigningKey {
  /** The 32-byte seed (RFC 8032's private key). */
  privateKey: Uint8Array
  publicKey: Uint8Array
}

function privateKeyObject(seed: Uint8Array): KeyObject {
  if (!(seed instanceof Uint8Array) || seed.length !== 32) throw new TypeError('Ed25519 private key must be 32 bytes')
  return createPrivateKey({ key: Buffer.concat([PKCS8_PREFIX, seed]), format: 'der', type: 'pkcs8' })
}

function publicKeyObject(key: Uint8Array): KeyObject {
  if (!(key instanceof Uint8Array) || key.length !== 32) throw new TypeError('Ed25519 public key must be 32 bytes')
  return createPublicKey({ key: Buffer.concat([SPKI_PREFIX, key]), format: 'der', type: 'spki' })
}

export function publicKeyFromPrivate(privateKey: Uint8Array): Uint8Array<ArrayBuffer> {
  const spki = createPublicKey(privateKeyObject(privateKey)).export({ format: 'der', type: 'spki' })
  return new Uint8Array(spki.subarray(SPKI_PREFIX.length))
}

export function generateSigningKey(): SigningKey {
  const privateKey = randomBytes(32)
  return { privateKey, publicKey: publicKeyFromPrivate(privateKey) }
}

/**
 * The bytes actually signed. A NUL inside the domain would let two
 * (domain, message) pairs share one encoding, so it is refused.
 */
function domainMessage(domain: string, message: Uint8Array | string): Buffer {
  if (typeof domain !== 'string' || domain.length === 0 || domain.includes('\0')) {
    throw new TypeError('signature domain must be a non-empty string without NUL')
  }
  const body = typeof message === 'string' ? utf8ToBytes(message) : message
  if (!(body instanceof Uint8Array)) throw new TypeError('message must be bytes or a string')
  return Buffer.concat([utf8ToBytes(domain), Uint8Array.of(0), body])
}

/** A 64-byte signature over `domain || 0x00 || message`. */
export function signDomain(domain: string, privateKey: Uint8Array, message: Uint8Array | string): Uint8Array<ArrayBuffer> {
  return new Uint8Array(sign(null, domainMessage(domain, message), privateKeyObject(privateKey)))
}

/** True only for a valid signature under this domain; never throws. */
export function verifyDomain(
  domain: string,
  publicKey: Uint8Array,
  message: Uint8Array | string,
  signature: Uint8Array,
): boolean {
  try {
    if (!(signature instanceof Uint8Array) || signature.length !== 64) return false
    return verify(null, domainMessage(domain, message), publicKeyObject(publicKey), signature)
  } catch {
    return false
  }
}

/**
 * JSON with object keys sorted (UTF-16 code unit order, as RFC 8785) and no
 * whitespace, so a signer and a verifier serialise one document to one byte
 * string. Undefined is handled as JSON.stringify does; what it would silently
 * mangle (non-finite numbers, functions, class instances) or choke on
 * (bigints, cycles) is refused with a TypeError.
 */
export function canonicalJson(value: unknown): string {
  const seen = new Set<object>()
  const walk = (v: unknown): string | undefined => {
    if (v === null || typeof v === 'boolean' || typeof v === 'string') return JSON.stringify(v)
    if (typeof v === 'number') {
      if (!Number.isFinite(v)) throw new TypeError('canonicalJson: non-finite number')
      return JSON.stringify(v)
    }
    if (v === undefined) return undefined
    if (typeof v !== 'object') throw new TypeError(`canonicalJson: cannot encode ${typeof v}`)
    if (typeof (v as { toJSON?: unknown }).toJSON === 'function') return walk((v as { toJSON(): unknown }).toJSON())
    if (seen.has(v)) throw new TypeError('canonicalJson: cycle')
    seen.add(v)
    let out: string
    if (Array.isArray(v)) {
      out = `[${v.map((item) => walk(item) ?? 'null').join(',')}]`
    } else {
      const proto = Object.getPrototypeOf(v)
      if (proto !== Object.prototype && proto !== null) throw new TypeError('canonicalJson: not a plain object')
      const fields: string[] = []
      for (const key of Object.keys(v).sort()) {
        const encoded = walk((v as Record<string, unknown>)[key])
        if (encoded !== undefined) fields.push(`${JSON.stringify(key)}:${encoded}`)
      }
      out = `{${fields.join(',')}}`
    }
    seen.delete(v)
    return out
  }
  const text = walk(value)
  if (text === undefined) throw new TypeError('canonicalJson: nothing to encode')
  return text
}
