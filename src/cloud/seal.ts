// Sealing cloud secrets at rest: AES-256-GCM under a key derived from
// platform/master.key for one purpose. What the blob belongs to is bound in as
// associated data, so a sealed blob cannot be moved to another row: provider
// credentials to another provider, first-boot data to another provision. The
// sealing itself is src/crypto/seal.ts's; this file names the purposes.
import { sealBytes, unsealBytes } from '../crypto/seal.ts'
import { deriveKey } from '../crypto/tokens.ts'
import { MusterError } from '../errors.ts'

export const SEAL_PURPOSE = 'muster cloud credentials v1'
export const FIRST_BOOT_PURPOSE = 'muster cloud first-boot v1'

export function sealKey(masterKey: Uint8Array, purpose = SEAL_PURPOSE): Uint8Array {
  return deriveKey(masterKey, purpose)
}

/** version (1) ‖ nonce (12) ‖ ciphertext ‖ tag (16), as src/crypto/seal.ts seals. */
export function sealFor(key: Uint8Array, aad: string, plaintext: string): Uint8Array {
  return sealBytes(key, aad, plaintext)
}

/** The plaintext, or null when this key and binding cannot open it. */
export function unsealFor(key: Uint8Array, aad: string, sealed: Uint8Array): string | null {
  return unsealBytes(key, aad, sealed)?.toString('utf8') ?? null
}

export function seal(key: Uint8Array, provider: string, plaintext: string): Uint8Array {
  return sealFor(key, `${SEAL_PURPOSE}:${provider}`, plaintext)
}

export function unseal(key: Uint8Array, provider: string, sealed: Uint8Array): string {
  const text = unsealFor(key, `${SEAL_PURPOSE}:${provider}`, sealed)
  if (text === null) throw new MusterError('internal', `The stored ${provider} credentials cannot be opened with this Platform's master key; connect the provider again.`)
  return text
}
