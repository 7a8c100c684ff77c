// Sealing secrets at rest: AES-256-GCM under a key derived from master.key
// for one purpose (HKDF). The associated data binds each sealed value to its
// name, so a sealed blob cannot be moved to another row and opened there.
import { createCipheriv, createDecipheriv } from 'node:crypto'
import { randomBytes } from './tokens.ts'

const FORMAT = 1

/** format (1) ‖ nonce (12) ‖ ciphertext ‖ tag (16). */
export function sealBytes(key: Uint8Array, aad: string, plaintext: string | Uint8Array): Uint8Array {
  const nonce = randomBytes(12)
  const c = createCipheriv('aes-256-gcm', key, nonce)
  c.setAAD(Buffer.from(aad))
  const body = Buffer.concat([c.update(typeof plaintext === 'string' ? Buffer.from(plaintext, 'utf8') : plaintext), c.final()])
  return new Uint8Array(Buffer.concat([Buffer.from([FORMAT]), nonce, body, c.getAuthTag()]))
}

/** The plaintext, or null when the key, the name or the bytes do not match. */
export function unsealBytes(key: Uint8Array, aad: string, sealed: Uint8Array): Buffer | null {
  try {
    if (sealed[0] !== FORMAT || sealed.length < 1 + 12 + 16) return null
    const d = createDecipheriv('aes-256-gcm', key, sealed.subarray(1, 13))
    d.setAAD(Buffer.from(aad))
    d.setAuthTag(sealed.subarray(sealed.length - 16))
    return Buffer.concat([d.update(sealed.subarray(13, sealed.length - 16)), d.final()])
  } catch {
    return null
  }
}
