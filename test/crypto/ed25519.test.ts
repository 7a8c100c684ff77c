import { describe, expect, test } from 'bun:test'
import {
  canonicalJson, generateSigningKey, publicKeyFromPrivate, signDomain, verifyDomain,
} from '../../src/crypto/ed25519.ts'

const A = 'muster trust-key v1'
const B = 'muster assignment v1'
const enc = (s: string) => new TextEncoder().encode(s) as Uint8Array<ArrayBuffer>

describe('signDomain / verifyDomain', () => {
  test('a signature verifies under its own domain, key and message only', () => {
    const k = generateSigningKey()
    expect(k.privateKey.length).toBe(32)
    expect(k.publicKey.length).toBe(32)
    const sig = signDomain(A, k.privateKey, 'hello')
    expect(sig.length).toBe(64)
    expect(verifyDomain(A, k.publicKey, 'hello', sig)).toBe(true)
    expect(verifyDomain(A, k.publicKey, enc('hello'), sig)).toBe(true) // string = its UTF-8 bytes
    expect(verifyDomain(B, k.publicKey, 'hello', sig)).toBe(false)
    expect(verifyDomain(A, k.publicKey, 'hellO', sig)).toBe(false)
    expect(verifyDomain(A, generateSigningKey().publicKey, 'hello', sig)).toBe(false)
    const flipped = sig.slice()
    flipped[10]! ^= 1
    expect(verifyDomain(A, k.publicKey, 'hello', flipped)).toBe(false)
  })

  test('the domain boundary cannot be shifted into the message', () => {
    const k = generateSigningKey()
    const sig = signDomain('ab', k.privateKey, 'c')
    expect(verifyDomain('a', k.publicKey, 'bc', sig)).toBe(false)
    expect(verifyDomain('abc', k.publicKey, '', sig)).toBe(false)
    // a NUL inside the domain would make ("a\0b", m) and ("a", "b\0" + m) collide
    expect(() => signDomain('a\0b', k.privateKey, 'c')).toThrow()
    expect(() => signDomain('', k.privateKey, 'c')).toThrow()
    const sig2 = signDomain('a', k.privateKey, 'b\0c')
    expect(verifyDomain('a\0b', k.publicKey, 'c', sig2)).toBe(false)
  })

  test('malformed keys, signatures and domains give false, never an exception', () => {
    const k = generateSigningKey()
    const sig = signDomain(A, k.privateKey, 'm')
    const cases: [unknown, unknown, unknown, unknown][] = [
      [A, k.publicKey.subarray(0, 31), 'm', sig],
      [A, new Uint8Array(32), 'm', sig],
      [A, k.publicKey, 'm', sig.subarray(0, 63)],
      [A, k.publicKey, 'm', new Uint8Array(65)],
      [A, k.publicKey, 'm', new Uint8Array(64)],
      [A, k.publicKey, 'm', 'not bytes'],
      [A, 'not bytes', 'm', sig],
      [A, null, 'm', sig],
      [A, k.publicKey, 42, sig],
      ['', k.publicKey, 'm', sig],
      [undefined, k.publicKey, 'm', sig],
    ]
    for (const [d, pub, msg, s] of cases) {
      expect(verifyDomain(d as string, pub as Uint8Array, msg as string, s as Uint8Array)).toBe(false)
    }
    expect(verifyDomain(A, k.publicKey, 'm', sig)).toBe(true)
    expect(() => signDomain(A, new Uint8Array(31), 'm')).toThrow()
  })

  test('keys and signatures are standard Ed25519 (RFC 8032, WebCrypto)', async () => {
    // RFC 8032 §7.1 test 1
    const seed = new Uint8Array(Buffer.from('9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60', 'hex'))
    expect(Buffer.from(publicKeyFromPrivate(seed)).toString('hex')).toBe(
      'd75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a',
    )
    const k = generateSigningKey()
    const sig = signDomain(A, k.privateKey, 'payload')
    const signed = new Uint8Array([...enc(A), 0, ...enc('payload')])
    const pub = await crypto.subtle.importKey('raw', new Uint8Array(k.publicKey), { name: 'Ed25519' }, false, ['verify'])
    expect(await crypto.subtle.verify('Ed25519', pub, sig, signed)).toBe(true)
    expect(await crypto.subtle.verify('Ed25519', pub, sig, enc('payload'))).toBe(false)
  })
})

describe('canonicalJson', () => {
  test('sorts keys at every depth and drops whitespace', () => {
    const doc = { b: 1, a: { d: [1, { z: 1, y: 2 }], c: 'x' } }
    expect(canonicalJson(doc)).toBe('{"a":{"c":"x","d":[1,{"y":2,"z":1}]},"b":1}')
    const same = { a: { c: 'x', d: [1, { y: 2, z: 1 }] }, b: 1 }
    expect(canonicalJson(same)).toBe(canonicalJson(doc))
  })

  test('scalars, undefined, dates and escaping match JSON', () => {
    expect(canonicalJson({ u: undefined, n: null, t: true, s: 'é"\n\u2028', x: [undefined, 1.5e-7] })).toBe(
      `{"n":null,"s":${JSON.stringify('é"\n\u2028')},"t":true,"x":[null,1.5e-7]}`,
    )
    expect(canonicalJson(new Date(0))).toBe('"1970-01-01T00:00:00.000Z"')
    expect(canonicalJson({ "b\u00e9": 1, b: 2, B: 3 })).toBe('{"B":3,"b":2,"bé":1}')
    const shared = { k: 1 }
    expect(canonicalJson([shared, shared])).toBe('[{"k":1},{"k":1}]')
  })

  test('refuses what cannot be signed deterministically', () => {
    const cyclic: Record<string, unknown> = {}
    cyclic.self = cyclic
    for (const bad of [Number.NaN, Infinity, 1n, new Map(), cyclic, () => 1, Symbol('s'), undefined, { x: new Uint8Array(1) }]) {
      expect(() => canonicalJson(bad)).toThrow(TypeError)
    }
  })
})
