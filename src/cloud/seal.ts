// Sealing cloud secrets at rest: AES-256-GCM under a key derived from
// platform/master.key for one purpose. What the blob belongs to is bound in as
// associated data, so a sealed blob cannot be moved to another row: provider
// credentials to another provider, first-boot data to another provision.
import { createCipheriv, createDecipheriv } from 'node:crypto'
import { deriveKey, randomBytes } from '../crypto/tokens.ts'
import { MusterError } from '../errors.ts'

export const SEAL_PURPOSE = 'muster cloud credentials v1'
export const FIRST_BOOT_PURPOSE = 'muster cloud first-boot v1'
const VERSION = 1

export function sealKey(masterKey: Uint8Array, purpose = SEAL_PURPOSE): Uint8Array {
  return deriveKey(masterKey, purpose)
}

/** version (1) ‖ nonce (12) ‖ ciphertext ‖ tag (16). */
export function sealFor(key: Uint8Array, aad: string, plaintext: string): Uint8Array {
  const nonce = randomBytes(12)
  const c = createCipheriv('aes-256-gcm', key, nonce)
  c.setAAD(Buffer.from(aad))
  const body = Buffer.concat([c.update(plaintext, 'utf8'), c.final()])
  return new Uint8Array(Buffer.concat([Buffer.from([VERSION]), nonce, body, c.getAuthTag()]))
}

/** The plaintext, or null when this key and binding cannot open it. */
export function unsealFor(key: Uint8Array, aad: string, sealed: Uint8Array): string | null {
  try {
    if (sealed[0] !== VERSION || sealed.length < 1 + 12 + 16) return null
    const d = createDecipheriv('aes-256-gcm', key, sealed.subarray(1, 13))
    d.setAAD(Buffer.from(aad))
    d.setAuthTag(sealed.subarray(sealed.length - 16))
    return Buffer.concat([d.update(sealed.subarray(13, sealed.length - 16)), d.final()]).toString('utf8')
  } catch {
    return null
  }
}

export function seal(key: Uint8Array, provider: string, plaintext: string): Uint8Array {
  return sealFor(key, `${SEAL_PURPOSE}:${provider}`, plaintext)
}

export function unseal(key: Uint8Array, provider: string, sealed: Uint8Array): string {
  const text = unsealFor(key, `${SEAL_PURPOSE}:${provider}`, sealed)
  if (text === null) throw new MusterError('internal', `The stored ${provider} credentials cannot be opened with this Platform's master key; connect the provider again.`)
  return text
}
