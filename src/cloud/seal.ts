// Sealing provider credentials at rest: AES-256-GCM under a key derived from
// platform/master.key for this one purpose. The provider's name is bound in as
// associated data, so a sealed blob cannot be moved to another provider's row.
import { createCipheriv, createDecipheriv } from 'node:crypto'
import { deriveKey, randomBytes } from '../crypto/tokens.ts'
import { MusterError } from '../errors.ts'

export const SEAL_PURPOSE = 'muster cloud credentials v1'
const VERSION = 1

export function sealKey(masterKey: Uint8Array): Uint8Array {
  return deriveKey(masterKey, SEAL_PURPOSE)
}

/** version (1) ‖ nonce (12) ‖ ciphertext ‖ tag (16). */
export function seal(key: Uint8Array, provider: string, plaintext: string): Uint8Array {
  const nonce = randomBytes(12)
  const c = createCipheriv('aes-256-gcm', key, nonce)
  c.setAAD(Buffer.from(`${SEAL_PURPOSE}:${provider}`))
  const body = Buffer.concat([c.update(plaintext, 'utf8'), c.final()])
  return new Uint8Array(Buffer.concat([Buffer.from([VERSION]), nonce, body, c.getAuthTag()]))
}

export function unseal(key: Uint8Array, provider: string, sealed: Uint8Array): string {
  try {
    if (sealed[0] !== VERSION || sealed.length < 1 + 12 + 16) throw new Error('unknown format')
    const d = createDecipheriv('aes-256-gcm', key, sealed.subarray(1, 13))
    d.setAAD(Buffer.from(`${SEAL_PURPOSE}:${provider}`))
    d.setAuthTag(sealed.subarray(sealed.length - 16))
    return Buffer.concat([d.update(sealed.subarray(13, sealed.length - 16)), d.final()]).toString('utf8')
  } catch {
    throw new MusterError('internal', `The stored ${provider} credentials cannot be opened with this Platform's master key; connect the provider again.`)
  }
}
