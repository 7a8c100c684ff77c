import { describe, expect, test } from 'bun:test'
import { generateSigningKey } from '../../src/crypto/ed25519.ts'
import { b64url, randomBytes, randomSecret } from '../../src/crypto/tokens.ts'
import { MusterError } from '../../src/errors.ts'
import { fingerprintOfToken, formatOfficeToken, parseOfficeToken } from '../../src/wire/federation-formats.ts'
import type { Membership } from '../../src/federation/membership.ts'
import { checkVouch, mintVouch } from '../../src/federation/vouch.ts'
import { signDomain } from '../../src/crypto/ed25519.ts'
import { DOMAINS, vouchMessage } from '../../src/wire/federation-formats.ts'
import type { Role } from '../../src/wire/permissions.ts'

const controller = generateSigningKey()
const NOW = Date.parse('2026-03-01T12:00:00Z')

function membership(officeId = 'office-a', key = controller.publicKey): Membership {
  const token = parseOfficeToken(formatOfficeToken(officeId, key, randomSecret()))
  return { token, fingerprint: fingerprintOfToken(token) }
}

function refusal(fn: () => unknown): string {
  try {
    fn()
  } catch (e) {
    if (e instanceof MusterError) return e.code
    throw e
  }
  return 'accepted'
}

const office = membership()
const mint = (m = office, identity = 'alice', now = NOW, role: Role = 'operator') => mintVouch(controller, m.token.officeId, identity, role, m.fingerprint, now).vouch

describe('vouch verification at the office (offline)', () => {
  test('a fresh vouch verifies and names the office, the identity, the role and a 120 s expiry', () => {
    const v = checkVouch(mint(), office, NOW)
    expect(v).toMatchObject({ officeId: 'office-a', identity: 'alice', role: 'operator', expiresAt: NOW / 1000 + 120 })
    expect(mint()).toMatch(/^mfv2:office-a:alice:operator:\d+:[A-Za-z0-9_-]{22}:[A-Za-z0-9_-]{86}$/)
  })

  test('refuses garbage as vouch-malformed', () => {
    expect(refusal(() => checkVouch('hello', office, NOW))).toBe('vouch-malformed')
    expect(refusal(() => checkVouch(mint().replace('mfv2', 'mfv1'), office, NOW))).toBe('vouch-malformed')
    expect(refusal(() => checkVouch(mint().replace(':operator:', ':root:'), office, NOW))).toBe('vouch-malformed')
  })

  test("an older controller's vouch (mfv1) carries no role: it verifies, and the office grants it the least role", () => {
    const fields = { officeId: 'office-a', identity: 'alice', expiresAt: NOW / 1000 + 120, nonce: b64url(randomBytes(16)) }
    const proof = signDomain(DOMAINS.vouch, controller.privateKey, vouchMessage(fields, office.fingerprint))
    const v = checkVouch(`mfv1:office-a:alice:${fields.expiresAt}:${fields.nonce}:${b64url(proof)}`, office, NOW)
    expect(v.role).toBeUndefined()
    // the same signature does not pass as an mfv2 vouch with a role added
    expect(refusal(() => checkVouch(`mfv2:office-a:alice:superadmin:${fields.expiresAt}:${fields.nonce}:${b64url(proof)}`, office, NOW))).toBe('vouch-invalid')
  })

  test('refuses on a Platform with no membership as vouch-not-an-office', () => {
    expect(refusal(() => checkVouch(mint(), undefined, NOW))).toBe('vouch-not-an-office')
  })

  test('refuses a vouch for another office as vouch-office-mismatch', () => {
    const other = membership('office-b')
    expect(refusal(() => checkVouch(mint(other), office, NOW))).toBe('vouch-office-mismatch')
  })

  test('refuses after 120 s as vouch-expired, and not a moment before', () => {
    const v = mint()
    expect(refusal(() => checkVouch(v, office, NOW + 119_000))).toBe('accepted')
    expect(refusal(() => checkVouch(v, office, NOW + 120_000))).toBe('vouch-expired')
  })

  test('a rotated token invalidates every vouch minted under the old one', () => {
    const before = mint()
    const rotated: Membership = (() => {
      const token = parseOfficeToken(formatOfficeToken('office-a', controller.publicKey, randomSecret()))
      return { token, fingerprint: fingerprintOfToken(token) }
    })()
    expect(refusal(() => checkVouch(before, rotated, NOW))).toBe('vouch-invalid')
    expect(refusal(() => checkVouch(mint(rotated), rotated, NOW))).toBe('accepted')
  })

  test('a vouch signed by another key (an impostor controller) is vouch-invalid', () => {
    const impostor = generateSigningKey()
    const forged = mintVouch(impostor, 'office-a', 'alice', 'viewer', office.fingerprint, NOW).vouch
    expect(refusal(() => checkVouch(forged, office, NOW))).toBe('vouch-invalid')
  })

  describe('tampering with any field breaks the proof', () => {
    const parts = mint().split(':')
    const edit = (i: number, value: string) => parts.map((p, j) => (j === i ? value : p)).join(':')
    test('office id (to an office that holds the same controller key)', () => {
      const b = membership('office-b')
      expect(refusal(() => checkVouch(edit(1, 'office-b'), b, NOW))).toBe('vouch-invalid')
    })
    test('identity', () => expect(refusal(() => checkVouch(edit(2, 'superadmin'), office, NOW))).toBe('vouch-invalid'))
    test('role, raised', () => expect(refusal(() => checkVouch(edit(3, 'superadmin'), office, NOW))).toBe('vouch-invalid'))
    test('expiry, pushed later', () => expect(refusal(() => checkVouch(edit(4, String(Number(parts[4]) + 60)), office, NOW))).toBe('vouch-invalid'))
    test('nonce', () => expect(refusal(() => checkVouch(edit(5, b64url(randomBytes(16))), office, NOW))).toBe('vouch-invalid'))
    test('proof', () => {
      const proof = Buffer.from(parts[6]!, 'base64url')
      proof[10]! ^= 1
      expect(refusal(() => checkVouch(edit(6, proof.toString('base64url')), office, NOW))).toBe('vouch-invalid')
    })
  })

  test('minting refuses an empty identity (an API token tied to no account)', () => {
    expect(refusal(() => mintVouch(controller, 'office-a', '', 'operator', office.fingerprint, NOW))).toBe('vouch-identity-invalid')
  })
})
