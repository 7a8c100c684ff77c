// DER: the encoder muster uses to build X.509 certificates and key wrappers
// in-process (no openssl at run time, docs/security.md), and a strict minimal reader
// that is just enough to walk a certificate we were handed.

// Universal tags (X.690).
export const TAG = {
  BOOLEAN: 0x01,
  INTEGER: 0x02,
  BIT_STRING: 0x03,
  OCTET_STRING: 0x04,
  NULL: 0x05,
  OID: 0x06,
  UTF8_STRING: 0x0c,
  PRINTABLE_STRING: 0x13,
  IA5_STRING: 0x16,
  UTC_TIME: 0x17,
  GENERALIZED_TIME: 0x18,
  SEQUENCE: 0x30,
  SET: 0x31,
} as const

/** What the encoder returns: always a fresh buffer, so WebCrypto accepts it. */
export type Der = Uint8Array<ArrayBuffer>

const CONSTRUCTED = 0x20
const CONTEXT = 0x80

// ---------------------------------------------------------------- encoder

function concat(parts: readonly Uint8Array[]): Der {
  let size = 0
  for (const p of parts) size += p.length
  const out = new Uint8Array(size)
  let at = 0
  for (const p of parts) {
    out.set(p, at)
    at += p.length
  }
  return out
}

function encodeLength(n: number): Uint8Array {
  if (n < 0x80) return Uint8Array.of(n)
  const bytes: number[] = []
  for (let v = n; v > 0; v = Math.floor(v / 256)) bytes.unshift(v & 0xff)
  return Uint8Array.of(0x80 | bytes.length, ...bytes)
}

/** One tag-length-value. Only low tag numbers (< 31): X.509 needs no others. */
export function tlv(tag: number, value: Uint8Array): Der {
  if (!Number.isInteger(tag) || tag < 0 || tag > 0xff || (tag & 0x1f) === 0x1f) {
    throw new RangeError(`DER: unsupported tag ${tag}`)
  }
  return concat([Uint8Array.of(tag), encodeLength(value.length), value])
}

export const sequence = (...items: Uint8Array[]) => tlv(TAG.SEQUENCE, concat(items))

/** SET OF: DER wants the elements sorted by their encoding (X.690 11.6). */
export function set(...items: Uint8Array[]): Der {
  const sorted = [...items].sort(compareBytes)
  return tlv(TAG.SET, concat(sorted))
}

function compareBytes(a: Uint8Array, b: Uint8Array): number {
  const n = Math.min(a.length, b.length)
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return a[i]! - b[i]!
  return a.length - b.length
}

/**
 * A non-negative INTEGER. Bytes are read as unsigned big-endian; leading zeros
 * are dropped and a 0x00 is prefixed when the high bit is set, so the value
 * never reads back negative (ECDSA r and s, serials).
 */
export function integer(value: bigint | number | Uint8Array): Der {
  let bytes: Uint8Array
  if (value instanceof Uint8Array) {
    bytes = value
  } else {
    let v = BigInt(value)
    if (v < 0n) throw new RangeError('DER: negative INTEGER not supported')
    const out: number[] = []
    do {
      out.unshift(Number(v & 0xffn))
      v >>= 8n
    } while (v > 0n)
    bytes = Uint8Array.from(out)
  }
  let start = 0
  while (start < bytes.length - 1 && bytes[start] === 0) start++
  bytes = bytes.subarray(start)
  if (bytes.length === 0) bytes = Uint8Array.of(0)
  if (bytes[0]! & 0x80) bytes = concat([Uint8Array.of(0), bytes])
  return tlv(TAG.INTEGER, bytes)
}

function base128(n: bigint): number[] {
  const out = [Number(n & 0x7fn)]
  for (n >>= 7n; n > 0n; n >>= 7n) out.unshift(Number(n & 0x7fn) | 0x80)
  return out
}

export function oid(dotted: string): Der {
  const arcs = dotted.split('.').map((s) => {
    if (!/^\d+$/.test(s)) throw new RangeError(`DER: bad OID ${dotted}`)
    return BigInt(s)
  })
  const [first, second, ...rest] = arcs
  if (first === undefined || second === undefined || first > 2n || (first < 2n && second > 39n)) {
    throw new RangeError(`DER: bad OID ${dotted}`)
  }
  const body = [...base128(first * 40n + second), ...rest.flatMap(base128)]
  return tlv(TAG.OID, Uint8Array.from(body))
}

export function bitString(bytes: Uint8Array, unusedBits = 0): Der {
  if (unusedBits < 0 || unusedBits > 7 || (bytes.length === 0 && unusedBits !== 0)) {
    throw new RangeError('DER: bad BIT STRING padding')
  }
  return tlv(TAG.BIT_STRING, concat([Uint8Array.of(unusedBits), bytes]))
}

export const octetString = (bytes: Uint8Array) => tlv(TAG.OCTET_STRING, bytes)
export const utf8String = (text: string) => tlv(TAG.UTF8_STRING, new TextEncoder().encode(text))
export const boolean = (value: boolean) => tlv(TAG.BOOLEAN, Uint8Array.of(value ? 0xff : 0x00))
export const nullValue = () => tlv(TAG.NULL, new Uint8Array(0))

export function printableString(text: string): Der {
  if (!/^[A-Za-z0-9 '()+,\-./:=?]*$/.test(text)) throw new RangeError('DER: not a PrintableString')
  return tlv(TAG.PRINTABLE_STRING, new TextEncoder().encode(text))
}

export function ia5String(text: string): Der {
  if (!/^[\x00-\x7f]*$/.test(text)) throw new RangeError('DER: not an IA5String')
  return tlv(TAG.IA5_STRING, new TextEncoder().encode(text))
}

const pad = (n: number, width = 2) => String(n).padStart(width, '0')

function timeDigits(d: Date): string {
  if (Number.isNaN(d.getTime())) throw new RangeError('DER: invalid date')
  return `${pad(d.getUTCMonth() + 1)}${pad(d.getUTCDate())}${pad(d.getUTCHours())}${pad(d.getUTCMinutes())}${pad(d.getUTCSeconds())}Z`
}

/** YYMMDDHHMMSSZ; only years 1950–2049 fit. */
export function utcTime(d: Date): Der {
  const y = d.getUTCFullYear()
  if (y < 1950 || y > 2049) throw new RangeError('DER: UTCTime covers 1950–2049')
  return tlv(TAG.UTC_TIME, new TextEncoder().encode(pad(y % 100) + timeDigits(d)))
}

export function generalizedTime(d: Date): Der {
  return tlv(TAG.GENERALIZED_TIME, new TextEncoder().encode(pad(d.getUTCFullYear(), 4) + timeDigits(d)))
}

/** The X.509 Time choice: RFC 5280 4.1.2.5 requires UTCTime through 2049. */
export function x509Time(d: Date): Der {
  const y = d.getUTCFullYear()
  return y >= 1950 && y <= 2049 ? utcTime(d) : generalizedTime(d)
}

/** [n] EXPLICIT: wraps a whole encoding in a constructed context tag. */
export function explicit(n: number, inner: Uint8Array): Der {
  return tlv(CONTEXT | CONSTRUCTED | n, inner)
}

/** [n] IMPLICIT: replaces the tag; `value` is the contents only. */
export function implicit(n: number, value: Uint8Array, constructed = false): Der {
  return tlv(CONTEXT | (constructed ? CONSTRUCTED : 0) | n, value)
}

// ---------------------------------------------------------------- reader

export interface DerNode {
  tag: number
  constructed: boolean
  /** The contents octets. */
  value: Uint8Array
  /** The whole encoding, tag and length included (what a signature covers). */
  raw: Uint8Array
}

/** Reads one element at `offset`; throws RangeError on anything malformed. */
export function readDer(bytes: Uint8Array, offset = 0): DerNode {
  const tag = bytes[offset]
  if (tag === undefined) throw new RangeError('DER: truncated')
  if ((tag & 0x1f) === 0x1f) throw new RangeError('DER: high tag numbers not supported')
  let at = offset + 1
  const first = bytes[at++]
  if (first === undefined) throw new RangeError('DER: truncated')
  let length = first
  if (first & 0x80) {
    const n = first & 0x7f
    // 0x80 is BER's indefinite length: never valid DER. Over 4 bytes is absurd here.
    if (n === 0 || n > 4) throw new RangeError('DER: bad length')
    length = 0
    for (let i = 0; i < n; i++) {
      const b = bytes[at++]
      if (b === undefined) throw new RangeError('DER: truncated')
      length = length * 256 + b
    }
    if (length < 0x80 || (n > 1 && bytes[at - n] === 0)) throw new RangeError('DER: non-minimal length')
  }
  const end = at + length
  if (end > bytes.length) throw new RangeError('DER: truncated')
  return {
    tag,
    constructed: (tag & CONSTRUCTED) !== 0,
    value: view(bytes, at, end),
    raw: view(bytes, offset, end),
  }
}

/** bytes[start, end) as a Uint8Array over the same memory: subarray without its species look-up (~230 against ~80 ns here). */
const view = (bytes: Uint8Array, start: number, end: number) => new Uint8Array(bytes.buffer, bytes.byteOffset + start, end - start)

/** Reads exactly one element spanning all of `bytes` (no trailing garbage). */
export function readDerExact(bytes: Uint8Array): DerNode {
  const node = readDer(bytes)
  if (node.raw.length !== bytes.length) throw new RangeError('DER: trailing bytes')
  return node
}

/** The elements inside a constructed node. */
export function children(node: DerNode): DerNode[] {
  if (!node.constructed) throw new RangeError('DER: not a constructed element')
  const out: DerNode[] = []
  for (let at = 0; at < node.value.length; ) {
    const child = readDer(node.value, at)
    out.push(child)
    at += child.raw.length
  }
  return out
}

export function expectTag(node: DerNode | undefined, tag: number): DerNode {
  if (!node || node.tag !== tag) throw new RangeError(`DER: expected tag 0x${tag.toString(16)}`)
  return node
}

export function decodeOid(node: DerNode): string {
  const v = expectTag(node, TAG.OID).value
  if (v.length === 0 || (v[v.length - 1]! & 0x80) !== 0) throw new RangeError('DER: bad OID')
  // Arcs are numbers while they stay exact (below 2^46 before a shift by 7), bigints past that: the same text.
  const arcs: (number | bigint)[] = []
  let acc: number | bigint = 0
  for (let i = 0; i < v.length; i++) {
    const b = v[i]!
    acc = typeof acc === 'number' && acc < 2 ** 46 ? acc * 128 + (b & 0x7f) : (BigInt(acc) << 7n) | BigInt(b & 0x7f)
    if (!(b & 0x80)) {
      arcs.push(acc)
      acc = 0
    }
  }
  const head = arcs.shift()!
  if (typeof head === 'number') {
    const first = head < 80 ? Math.floor(head / 40) : 2
    return [first, head - first * 40, ...arcs].join('.')
  }
  return [2n, head - 80n, ...arcs].join('.')
}

/** INTEGER as a signed bigint (two's complement, as X.690 defines it). */
export function decodeInteger(node: DerNode): bigint {
  const v = expectTag(node, TAG.INTEGER).value
  if (v.length === 0) throw new RangeError('DER: empty INTEGER')
  let n = 0n
  for (const b of v) n = (n << 8n) | BigInt(b)
  return v[0]! & 0x80 ? n - (1n << BigInt(v.length * 8)) : n
}

/** BIT STRING contents without the unused-bits octet. */
export function decodeBitString(node: DerNode): { bytes: Uint8Array; unusedBits: number } {
  const v = expectTag(node, TAG.BIT_STRING).value
  const unusedBits = v[0]
  if (unusedBits === undefined || unusedBits > 7 || (v.length === 1 && unusedBits !== 0)) {
    throw new RangeError('DER: bad BIT STRING')
  }
  return { bytes: v.subarray(1), unusedBits }
}

/** UTCTime or GeneralizedTime in the Z-terminated, seconds form X.509 uses. */
export function decodeTime(node: DerNode): Date {
  const text = new TextDecoder().decode(node.value)
  let m: RegExpExecArray | null
  let year: number
  if (node.tag === TAG.UTC_TIME && (m = /^(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})Z$/.exec(text))) {
    const yy = Number(m[1])
    year = yy >= 50 ? 1900 + yy : 2000 + yy
  } else if (node.tag === TAG.GENERALIZED_TIME && (m = /^(\d{4})(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})Z$/.exec(text))) {
    year = Number(m[1])
  } else {
    throw new RangeError('DER: bad time')
  }
  const [, , mo, d, h, mi, s] = m.map(Number) as number[]
  const date = new Date(Date.UTC(year, mo! - 1, d, h, mi, s))
  if (Number.isNaN(date.getTime()) || date.getUTCMonth() !== mo! - 1) throw new RangeError('DER: bad time')
  return date
}
