import { describe, expect, test } from 'bun:test'
import { generateSigningKey } from '../../src/crypto/ed25519.ts'
import { b64url, randomSecret, sha256Hex } from '../../src/crypto/tokens.ts'
import { MusterError } from '../../src/errors.ts'
import { fingerprintOfToken, formatOfficeToken, parseOfficeToken, parseVouch, tokenFingerprint } from '../../src/wire/federation-formats.ts'

const key = generateSigningKey().publicKey
const secret = randomSecret()
const good = formatOfficeToken('office-a', key, secret)

describe('office join token', () => {
  test('round-trips: office id, controller key and secret', () => {
    expect(good).toMatch(/^mof1:office-a:[A-Za-z0-9_-]{43}:[A-Za-z0-9_-]{43}$/)
    const t = parseOfficeToken(`  ${good}\n`)
    expect(t.officeId).toBe('office-a')
    expect(Buffer.from(t.controllerKey).equals(Buffer.from(key))).toBe(true)
    expect(t.secret).toBe(secret)
  })

  const k = b64url(key)
  test.each([
    ['empty', ''],
    ['another scheme', `mof2:office-a:${k}:${secret}`],
    ['a join token of another kind', 'mjt_abcdefghijklmnop.secret'],
    ['missing secret', `mof1:office-a:${k}`],
    ['extra field', `${good}:x`],
    ['office id with capitals', `mof1:Office-A:${k}:${secret}`],
    ['office id starting with a dash', `mof1:-a:${k}:${secret}`],
    ['short key', `mof1:office-a:${k.slice(1)}:${secret}`],
    ['secret with padding', `mof1:office-a:${k}:${secret.slice(1)}=`],
  ])('refuses %s, naming the expected format', (_what, text) => {
    let err: unknown
    try {
      parseOfficeToken(text, 'MUSTER_JOIN_TOKEN')
    } catch (e) {
      err = e
    }
    expect(err).toBeInstanceOf(MusterError)
    expect((err as MusterError).message).toContain('mof1:<office_id>:<controller_verify_key>:<secret>')
    expect((err as MusterError).message).toContain('MUSTER_JOIN_TOKEN')
  })

  test('the fingerprint is computable from the stored digest, differs from it, and changes with the secret or the office', () => {
    const t = parseOfficeToken(good)
    const fp = fingerprintOfToken(t)
    expect(fp).toBe(tokenFingerprint('office-a', sha256Hex(secret)))
    expect(fp).not.toBe(sha256Hex(secret))
    expect(fingerprintOfToken(parseOfficeToken(formatOfficeToken('office-a', key, randomSecret())))).not.toBe(fp)
    expect(tokenFingerprint('office-b', sha256Hex(secret))).not.toBe(fp)
  })
})

describe('vouch shape', () => {
  const proof = b64url(new Uint8Array(64).fill(7))
  const nonce = b64url(new Uint8Array(16).fill(1))
  test('parses seven well-formed fields (mfv2), and six of an older controller (mfv1, no role)', () => {
    const v = parseVouch(`mfv2:office-a:alice@example.org:viewer:1700000000:${nonce}:${proof}`)
    expect(v).toMatchObject({ officeId: 'office-a', identity: 'alice@example.org', role: 'viewer', expiresAt: 1700000000, nonce })
    expect(v?.proof.length).toBe(64)
    const old = parseVouch(`mfv1:office-a:alice@example.org:1700000000:${nonce}:${proof}`)
    expect(old).toMatchObject({ officeId: 'office-a', identity: 'alice@example.org', expiresAt: 1700000000, nonce })
    expect(old?.role).toBeUndefined()
  })
  test.each([
    `mfv2:office-a:alice:1700000000:${nonce}:${proof}`,
    `mfv2:office-a:alice:root:1700000000:${nonce}:${proof}`,
    `mfv1:office-a:alice:operator:1700000000:${nonce}:${proof}`,
    `mfv3:office-a:alice:operator:1700000000:${nonce}:${proof}`,
    `mfv1:office-a:alice:17e8:${nonce}:${proof}`,
    `mfv1:office-a::1700000000:${nonce}:${proof}`,
    `mfv1:office-a:alice:1700000000:${nonce}`,
    `mfv1:office-a:alice:1700000000:${nonce}:${proof.slice(2)}`,
    `mfv1:office-a:al:ice:1700000000:${nonce}:${proof}`,
  ])('refuses %s', (text) => {
    expect(parseVouch(text)).toBeUndefined()
  })
})
