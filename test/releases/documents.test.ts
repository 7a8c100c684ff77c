// The signed documents of upgrades: release manifests (release keys), key
// endorsements, and rollout directives (trust keys).
import { describe, expect, test } from 'bun:test'
import { generateSigningKey } from '../../src/crypto/ed25519.ts'
import { b64url } from '../../src/crypto/tokens.ts'
import { acceptReleaseKeys, endorseKey, newReleaseKey, parseReleaseKeyFile, signManifest, verifyManifest, type Manifest } from '../../src/signed/releases.ts'
import { checkDirective as verifyDirective, DIRECTIVE } from '../../src/signed/documents.ts'
import { signDocument, type TrustSigner } from '../../src/signed/signed.ts'
import type { DirectivePayload as Directive } from '../../src/wire/rollouts.ts'

const signDirective = (sign: TrustSigner, d: Directive) => signDocument(DIRECTIVE, sign, d)
import { signDomain } from '../../src/crypto/ed25519.ts'
import { fromB64url } from '../../src/crypto/tokens.ts'

const manifest = (over: Partial<Manifest> = {}): Manifest => ({ version: '1.2.3', arch: 'x64', sha256: 'a'.repeat(64), size: 1000, sequence: 7, ...over })
const pub = (k: { kid: string; publicKey: string }) => ({ kid: k.kid, publicKey: k.publicKey })

describe('release manifests', () => {
  const key = newReleaseKey()
  test('a manifest signed by a held key verifies; a changed field, another key or another domain does not', () => {
    const doc = signManifest(key, manifest())
    expect(verifyManifest(doc, [pub(key)]).ok).toBe(true)
    for (const change of [{ sequence: 8 }, { sha256: 'b'.repeat(64) }, { size: 1001 }, { version: '1.2.4' }, { arch: 'arm64' as const }]) {
      const r = verifyManifest({ ...doc, manifest: { ...doc.manifest, ...change } }, [pub(key)])
      expect(r.ok).toBe(false)
    }
    const other = newReleaseKey()
    const byOther = signManifest(other, manifest())
    const r = verifyManifest(byOther, [pub(key)])
    expect(r).toEqual({ ok: false, reason: `the release manifest is signed by release key ${other.kid}, which this node does not trust` })
    // the same key's signature over the manifest bytes in another domain (a directive's) is no manifest signature
    const forged = { ...doc, signature: b64url(signDomain('muster rollout directive v1', fromB64url(key.privateKey), JSON.stringify(doc.manifest))) }
    expect(verifyManifest(forged, [pub(key)]).ok).toBe(false)
  })
  test('a manifest with a missing or extra field is malformed', () => {
    const doc = signManifest(key, manifest())
    expect(verifyManifest({ ...doc, manifest: { ...doc.manifest, extra: 1 } }, [pub(key)]).ok).toBe(false)
    const { size: _, ...noSize } = doc.manifest
    expect(verifyManifest({ ...doc, manifest: noSize }, [pub(key)]).ok).toBe(false)
  })
  test('a key file whose public half is not its private half is refused', () => {
    const k = newReleaseKey()
    expect(parseReleaseKeyFile(JSON.stringify(k)).kid).toBe(k.kid)
    expect(() => parseReleaseKeyFile(JSON.stringify({ ...k, publicKey: newReleaseKey().publicKey }))).toThrow(/damaged/)
  })
})

describe('release keys a node takes', () => {
  const first = newReleaseKey()
  const second = newReleaseKey()
  const third = newReleaseKey()
  test('a node holding none takes the first key; then only keys a held one endorsed, transitively', () => {
    const a = acceptReleaseKeys([], [pub(first)])
    expect(a.added).toEqual([first.kid])
    // an unendorsed key offered later is refused (a stolen Platform adds its own)
    const b = acceptReleaseKeys(a.keys, [pub(first), pub(newReleaseKey())])
    expect(b.added).toEqual([])
    expect(b.refused).toHaveLength(1)
    // endorsed by the first, then the third endorsed by the second, offered in any order
    const e2 = endorseKey(first, second)
    const e3 = endorseKey(second, third)
    const c = acceptReleaseKeys(a.keys, [e3, e2])
    expect(c.added.sort()).toEqual([second.kid, third.kid].sort())
  })
  test('an endorsement by a key the node does not hold, or a forged one, is refused; nothing removes a held key', () => {
    const stranger = newReleaseKey()
    const bad = endorseKey(stranger, second)
    expect(acceptReleaseKeys([pub(first)], [bad]).added).toEqual([])
    const forged = { ...endorseKey(first, second), publicKey: third.publicKey, kid: third.kid }
    expect(acceptReleaseKeys([pub(first)], [forged]).added).toEqual([])
    expect(acceptReleaseKeys([pub(first)], []).keys).toEqual([pub(first)])
  })
  test('a node holding none does not take an endorsed key it cannot check', () => {
    expect(acceptReleaseKeys([], [endorseKey(first, second)]).added).toEqual([])
  })
})

describe('rollout directives', () => {
  const k = generateSigningKey()
  const now = Date.parse('2026-06-01T12:00:00Z')
  const trust = [{ kid: 'k1', publicKey: b64url(k.publicKey), notBefore: '2026-01-01T00:00:00Z', notAfter: '2027-01-01T00:00:00Z' }]
  const sign = (d: string, m: string) => ({ kid: 'k1', signature: b64url(signDomain(d, k.privateKey, m)) })
  const rk = newReleaseKey()
  const directive = (over: Partial<Directive> = {}): Directive => ({ node: 'w1', rollout: 'abcdefghijkl', release: signManifest(rk, manifest()), mirrors: [], healthTimeoutMs: 60_000, issuedAt: now - 1000, expiresAt: now + 600_000, ...over })
  test('a directive for this node, signed by a trust key valid now and unexpired, verifies', () => {
    expect(verifyDirective(signDirective(sign, directive()), trust, 'w1', now).ok).toBe(true)
  })
  test('another node, expired, issued in the future, too long-lived, or tampered: refused', () => {
    expect(verifyDirective(signDirective(sign, directive()), trust, 'w2', now)).toMatchObject({ ok: false, reason: 'directive is for node w1, not w2' })
    expect(verifyDirective(signDirective(sign, directive({ expiresAt: now - 1 })), trust, 'w1', now)).toMatchObject({ ok: false, reason: expect.stringMatching(/expired/) })
    expect(verifyDirective(signDirective(sign, directive({ issuedAt: now + 3_600_000, expiresAt: now + 3_700_000 })), trust, 'w1', now)).toMatchObject({ ok: false, reason: expect.stringMatching(/future/) })
    expect(verifyDirective(signDirective(sign, directive({ expiresAt: now + 3_600_000 })), trust, 'w1', now)).toMatchObject({ ok: false, reason: 'directive has no valid lifetime' })
    const doc = signDirective(sign, directive())
    expect(verifyDirective({ ...doc, payload: { ...doc.payload, node: 'w2' } }, trust, 'w2', now)).toMatchObject({ ok: false, reason: 'bad signature' })
  })
  test('signed by a key not held, or outside its validity: refused as unknown (a refresh may help)', () => {
    const other = generateSigningKey()
    const doc = signDirective((d, m) => ({ kid: 'k2', signature: b64url(signDomain(d, other.privateKey, m)) }), directive())
    expect(verifyDirective(doc, trust, 'w1', now)).toMatchObject({ ok: false, unknownKey: true })
    expect(verifyDirective(signDirective(sign, directive()), trust, 'w1', Date.parse('2027-02-01T00:00:00Z'))).toMatchObject({ ok: false, unknownKey: true })
  })
})
