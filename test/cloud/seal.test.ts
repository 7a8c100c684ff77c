import { describe, expect, test } from 'bun:test'
import { seal, sealKey, unseal } from '../../src/cloud/seal.ts'
import { randomBytes } from '../../src/crypto/tokens.ts'

describe('sealed credentials', () => {
  const master = randomBytes(32)
  const key = sealKey(master)

  test('round trip; the plaintext is not in the sealed bytes; each seal differs', () => {
    const a = seal(key, 'hetzner', '{"token":"secret-token-value"}')
    const b = seal(key, 'hetzner', '{"token":"secret-token-value"}')
    expect(Buffer.from(a).toString('latin1')).not.toContain('secret-token-value')
    expect(Buffer.from(a).equals(Buffer.from(b))).toBe(false)
    expect(unseal(key, 'hetzner', a)).toBe('{"token":"secret-token-value"}')
  })

  test('another master key, another provider, or one flipped bit cannot open it', () => {
    const sealed = seal(key, 'hetzner', 'x')
    expect(() => unseal(sealKey(randomBytes(32)), 'hetzner', sealed)).toThrow(/cannot be opened/)
    expect(() => unseal(key, 'digitalocean', sealed)).toThrow(/cannot be opened/)
    const flipped = new Uint8Array(sealed)
    flipped[20]! ^= 1
    expect(() => unseal(key, 'hetzner', flipped)).toThrow(/cannot be opened/)
  })

  test('the key is derived from the master key for this purpose, not the master key itself', () => {
    expect(Buffer.from(key).equals(Buffer.from(master))).toBe(false)
    expect(Buffer.from(sealKey(master)).equals(Buffer.from(key))).toBe(true)
  })
})
