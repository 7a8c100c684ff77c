import { describe, expect, test } from 'bun:test'
import {
  TAG, bitString, boolean, children, decodeBitString, decodeInteger, decodeOid, decodeTime, explicit,
  generalizedTime, ia5String, implicit, integer, nullValue, octetString, oid, printableString, readDer,
  readDerExact, sequence, set, utcTime, utf8String, x509Time,
} from '../../src/crypto/der.ts'

const hex = (b: Uint8Array) => Buffer.from(b).toString('hex')
const bytes = (h: string) => new Uint8Array(Buffer.from(h, 'hex'))

describe('DER encoder', () => {
  test('INTEGER is minimal and never negative', () => {
    expect(hex(integer(0))).toBe('020100')
    expect(hex(integer(127))).toBe('02017f')
    expect(hex(integer(128))).toBe('02020080')
    expect(hex(integer(256))).toBe('02020100')
    expect(hex(integer(2n ** 64n))).toBe('0209010000000000000000')
    // raw bytes: leading zeros dropped, 0x00 added back when the high bit is set
    expect(hex(integer(bytes('000080')))).toBe('02020080')
    expect(hex(integer(bytes('ff')))).toBe('020200ff')
    expect(hex(integer(bytes('0000')))).toBe('020100')
    expect(() => integer(-1)).toThrow()
  })

  test('OID, BOOLEAN, NULL, BIT STRING, strings', () => {
    expect(hex(oid('1.2.840.113549.1.1.11'))).toBe('06092a864886f70d01010b')
    expect(hex(oid('2.5.29.17'))).toBe('0603551d11')
    expect(hex(oid('2.999.3'))).toBe('0603883703')
    expect(() => oid('1')).toThrow()
    expect(() => oid('1.40')).toThrow()
    expect(() => oid('1.2.x')).toThrow()
    expect(hex(boolean(true))).toBe('0101ff')
    expect(hex(boolean(false))).toBe('010100')
    expect(hex(nullValue())).toBe('0500')
    expect(hex(bitString(Uint8Array.of(0x84), 2))).toBe('03020284')
    expect(() => bitString(new Uint8Array(0), 1)).toThrow()
    expect(hex(utf8String('é'))).toBe('0c02c3a9')
    expect(hex(printableString('Ab 1'))).toBe('130441622031')
    expect(() => printableString('a@b')).toThrow()
    expect(hex(ia5String('a.b'))).toBe('1603612e62')
    expect(() => ia5String('é')).toThrow()
  })

  test('long-form lengths', () => {
    expect(hex(octetString(new Uint8Array(127))).slice(0, 4)).toBe('047f')
    expect(hex(octetString(new Uint8Array(200))).slice(0, 6)).toBe('0481c8')
    expect(hex(octetString(new Uint8Array(300))).slice(0, 8)).toBe('0482012c')
    expect(octetString(new Uint8Array(70000)).length).toBe(70000 + 5)
  })

  test('SEQUENCE, SET (sorted), explicit and implicit tags', () => {
    expect(hex(sequence(integer(1), boolean(true)))).toBe('30060201010101ff')
    expect(hex(set(integer(2), integer(1)))).toBe('3106020101020102')
    expect(hex(explicit(0, integer(2)))).toBe('a003020102')
    expect(hex(explicit(3, sequence()))).toBe('a3023000')
    expect(hex(implicit(2, new TextEncoder().encode('a')))).toBe('820161')
    expect(hex(implicit(1, sequence(), true))).toBe('a1023000')
  })

  test('times: UTCTime through 2049, GeneralizedTime after', () => {
    const d2049 = new Date(Date.UTC(2049, 11, 31, 23, 59, 59))
    const d2050 = new Date(Date.UTC(2050, 0, 1, 0, 0, 0))
    expect(new TextDecoder().decode(utcTime(d2049).subarray(2))).toBe('491231235959Z')
    expect(() => utcTime(d2050)).toThrow()
    expect(x509Time(d2049)[0]).toBe(TAG.UTC_TIME)
    expect(x509Time(d2050)[0]).toBe(TAG.GENERALIZED_TIME)
    expect(new TextDecoder().decode(generalizedTime(d2050).subarray(2))).toBe('20500101000000Z')
    expect(() => x509Time(new Date(Number.NaN))).toThrow()
  })
})

describe('DER reader', () => {
  test('walks what the encoder wrote', () => {
    const der = sequence(integer(5), utf8String('hi'), explicit(0, oid('1.2.3')), bitString(Uint8Array.of(1, 2)))
    const root = readDerExact(der)
    expect(root.tag).toBe(TAG.SEQUENCE)
    expect(root.constructed).toBe(true)
    const [n, s, tagged, bits] = children(root)
    expect(decodeInteger(n!)).toBe(5n)
    expect(new TextDecoder().decode(s!.value)).toBe('hi')
    expect(tagged!.tag).toBe(0xa0)
    expect(decodeOid(children(tagged!)[0]!)).toBe('1.2.3')
    expect(Array.from(decodeBitString(bits!).bytes)).toEqual([1, 2])
    expect(hex(n!.raw)).toBe('020105')
  })

  test('round-trips OIDs, integers and times', () => {
    for (const id of ['2.5.29.17', '1.2.840.10045.4.3.2', '2.999.3', '1.3.6.1.4.1.311.21.20', '0.9.2342.19200300.100.1.1', '1.2.9007199254740993', '2.25.329800735698586629295641978511506172918', '2.9007199254740993.1']) {
      expect(decodeOid(readDer(oid(id)))).toBe(id)
    }
    for (const v of [0n, 1n, 127n, 128n, 255n, 2n ** 159n - 1n]) expect(decodeInteger(readDer(integer(v)))).toBe(v)
    expect(decodeInteger(readDer(bytes('0201ff')))).toBe(-1n)
    for (const d of [new Date(Date.UTC(1999, 1, 28, 1, 2, 3)), new Date(Date.UTC(2049, 0, 1)), new Date(Date.UTC(2077, 6, 4, 12))]) {
      expect(decodeTime(readDer(x509Time(d))).getTime()).toBe(d.getTime())
    }
  })

  test('refuses malformed encodings', () => {
    expect(() => readDer(bytes(''))).toThrow()
    expect(() => readDer(bytes('30'))).toThrow()
    expect(() => readDer(bytes('30800201000000'))).toThrow() // BER indefinite length
    expect(() => readDer(bytes('3005020101'))).toThrow() // truncated
    expect(() => readDer(bytes('048105' + '00'.repeat(5)))).toThrow() // non-minimal length
    expect(() => readDer(bytes('1f0100'))).toThrow() // high tag number
    expect(() => readDerExact(bytes('02010500'))).toThrow() // trailing bytes
    expect(() => children(readDer(bytes('020105')))).toThrow() // primitive
    expect(() => children(readDer(bytes('3003020501')))).toThrow() // child overruns parent
    expect(() => decodeOid(readDer(bytes('060188')))).toThrow() // unterminated arc
    expect(() => decodeTime(readDer(bytes('170d3939313333313030303030305a')))).toThrow() // month 13
    expect(() => decodeInteger(readDer(bytes('0101ff')))).toThrow() // wrong tag
  })
})
