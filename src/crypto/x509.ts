// ECDSA P-256 certificates (docs/security.md): self-signed ones for agents, the
// Platform CA and the server certificates it issues, generated with WebCrypto
// and our DER writer; parsing of certificates we are handed, fingerprints, and
// the checks that decide when a server certificate must be renewed.
import { X509Certificate, createPublicKey } from 'node:crypto'
import { isIP } from 'node:net'
import { MusterError } from '../errors.ts'
import {
  TAG, bitString, boolean, children, decodeBitString, decodeOid, decodeTime, expectTag, explicit,
  implicit, integer, octetString, oid, readDerExact, sequence, set, utf8String, x509Time,
  type DerNode,
} from './der.ts'
import { randomBytes, sha256Bytes, sha256Hex } from './tokens.ts'

const OID = {
  ecPublicKey: '1.2.840.10045.2.1',
  prime256v1: '1.2.840.10045.3.1.7',
  ecdsaWithSha256: '1.2.840.10045.4.3.2',
  commonName: '2.5.4.3',
  subjectKeyIdentifier: '2.5.29.14',
  keyUsage: '2.5.29.15',
  subjectAltName: '2.5.29.17',
  authorityKeyIdentifier: '2.5.29.35',
  basicConstraints: '2.5.29.19',
  extKeyUsage: '2.5.29.37',
  serverAuth: '1.3.6.1.5.5.7.3.1',
  clientAuth: '1.3.6.1.5.5.7.3.2',
} as const

const DAY_MS = 86_400_000
// A peer whose clock runs a little behind must still accept a fresh certificate.
const BACKDATE_MS = 5 * 60_000
const NOT_A_CERT = 'certPem: not an X.509 certificate with a public key'

export interface CertOptions {
  commonName: string
  dnsNames: string[]
  /** IPv4 or IPv6 literals; brackets around IPv6 are accepted. */
  ipAddresses: string[]
  days: number
  /** Positive, at most 20 octets (RFC 5280 4.1.2.2). Random when omitted. */
  serial?: bigint
  /** The caller's clock (ms); the validity counts from it. Default Date.now(). */
  now?: number
}

export interface KeyAndCert {
  /** PKCS#8 "PRIVATE KEY" PEM, what Bun.serve's tls.key takes. */
  keyPem: string
  certPem: string
  fingerprint: string
  notAfter: Date
}

export interface ParsedCertificate {
  der: Uint8Array
  fingerprint: string
  /** SubjectPublicKeyInfo DER. */
  publicKeyDer: Uint8Array
  /** The issuer's and the subject's Name, DER. */
  issuerDer: Uint8Array
  subjectDer: Uint8Array
  notBefore: Date
  notAfter: Date
  dnsNames: string[]
  /** Canonical text form (IPv6 compressed, RFC 5952). */
  ipAddresses: string[]
}

// ---------------------------------------------------------------- PEM

export function derToPem(der: Uint8Array, label = 'CERTIFICATE'): string {
  const b64 = Buffer.from(der).toString('base64').replace(/.{64}/g, '$&\n').replace(/\n$/, '')
  return `-----BEGIN ${label}-----\n${b64}\n-----END ${label}-----\n`
}

/** The first `label` block of a PEM text, decoded. */
export function pemToDer(pem: string, label = 'CERTIFICATE'): Uint8Array {
  const re = new RegExp(`-----BEGIN ${label}-----([A-Za-z0-9+/=\\s]*?)-----END ${label}-----`)
  const body = re.exec(pem)?.[1]?.replace(/\s+/g, '')
  // Buffer's decoder skips junk silently; insist on canonical base64 instead.
  if (!body || !/^[A-Za-z0-9+/]+={0,2}$/.test(body) || body.length % 4 !== 0) {
    throw new MusterError('invalid-request', `not a PEM ${label}`)
  }
  return new Uint8Array(Buffer.from(body, 'base64'))
}

/** `sha256:` + 64 lowercase hex of the DER (docs/security.md). */
export function certFingerprint(pemOrDer: string | Uint8Array): string {
  return `sha256:${sha256Hex(typeof pemOrDer === 'string' ? pemToDer(pemOrDer) : pemOrDer)}`
}

// ---------------------------------------------------------------- IP addresses

/** 4 or 16 bytes for an IP literal; undefined for anything else. */
export function ipToBytes(ip: string): Uint8Array | undefined {
  const text = ip.startsWith('[') && ip.endsWith(']') ? ip.slice(1, -1) : ip
  const kind = isIP(text)
  if (kind === 4) return Uint8Array.from(text.split('.').map(Number))
  if (kind !== 6) return undefined
  let host: string
  try {
    // WHATWG URL canonicalises IPv6 (hex groups only, embedded IPv4 folded) and rejects zone ids.
    host = new URL(`http://[${text}]/`).hostname.slice(1, -1)
  } catch {
    return undefined
  }
  const [head = '', tail] = host.split('::')
  const groups = (s: string) => (s ? s.split(':').map((g) => parseInt(g, 16)) : [])
  const h = groups(head)
  const t = tail === undefined ? [] : groups(tail)
  const all = [...h, ...new Array<number>(8 - h.length - t.length).fill(0), ...t]
  const out = new Uint8Array(16)
  all.forEach((g, i) => {
    out[i * 2] = g >> 8
    out[i * 2 + 1] = g & 0xff
  })
  return out
}

export function bytesToIp(bytes: Uint8Array): string | undefined {
  if (bytes.length === 4) return [...bytes].join('.')
  if (bytes.length !== 16) return undefined
  const groups: string[] = []
  for (let i = 0; i < 16; i += 2) groups.push(((bytes[i]! << 8) | bytes[i + 1]!).toString(16))
  return new URL(`http://[${groups.join(':')}]/`).hostname.slice(1, -1)
}

const sameBytes = (a: Uint8Array, b: Uint8Array) => a.length === b.length && a.every((x, i) => x === b[i])

// ---------------------------------------------------------------- generation

const DNS_NAME = /^(\*\.)?([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/

const extension = (id: string, critical: boolean, value: Uint8Array) =>
  sequence(oid(id), ...(critical ? [boolean(true)] : []), octetString(value))

function randomSerial(): bigint {
  const bytes = randomBytes(16)
  bytes[0] = (bytes[0]! & 0x7f) | 0x40 // positive, and a fixed 16-octet length
  return BigInt(`0x${Buffer.from(bytes).toString('hex')}`)
}

/** WebCrypto gives raw r‖s; X.509 wants SEQUENCE { INTEGER r, INTEGER s }. */
function ecdsaRawToDer(raw: Uint8Array): Uint8Array {
  if (raw.length !== 64) throw new Error('unexpected ECDSA P-256 signature length')
  return sequence(integer(raw.subarray(0, 32)), integer(raw.subarray(32)))
}

/** How a certificate is signed and what it may do. */
export type CertProfile =
  /** Self-signed and self-anchored: agent certificates (and, before the Platform CA, the listener's). */
  | { kind: 'self-signed' }
  /** The Platform CA: self-signed, signs certificates only. */
  | { kind: 'ca' }
  /** A server certificate issued by a CA: `issuer` is its certificate and key. */
  | { kind: 'leaf'; issuer: { certPem: string; keyPem: string } }

function checkNames(opts: CertOptions): Uint8Array[] {
  for (const name of opts.dnsNames) {
    if (!DNS_NAME.test(name) || name.length > 253) throw new MusterError('invalid-request', `certificate: not a DNS name: ${name}`)
  }
  return opts.ipAddresses.map((ip) => {
    const b = ipToBytes(ip)
    if (!b) throw new MusterError('invalid-request', `certificate: not an IP address: ${ip}`)
    return b
  })
}

const keyIdOf = (spki: Uint8Array) => sha256Bytes(decodeBitString(children(readDerExact(spki))[1]!).bytes).subarray(0, 20)

function extensionsFor(profile: CertProfile, spki: Uint8Array, issuerKeyId: Uint8Array | undefined, sans: Uint8Array | undefined): Uint8Array[] {
  const common = [
    // RFC 7093 method 1: leftmost 160 bits of the SHA-256 of the public key.
    extension(OID.subjectKeyIdentifier, false, octetString(keyIdOf(spki))),
    ...(sans ? [extension(OID.subjectAltName, false, sans)] : []),
  ]
  if (profile.kind === 'ca') {
    return [
      extension(OID.basicConstraints, true, sequence(boolean(true), integer(0))), // CA, path length 0
      // keyCertSign (bit 5) + cRLSign (bit 6): 0b0000_0110, one trailing unused bit.
      extension(OID.keyUsage, true, bitString(Uint8Array.of(0x06), 1)),
      ...common,
    ]
  }
  if (profile.kind === 'leaf') {
    return [
      extension(OID.basicConstraints, true, sequence()), // not a CA (DER omits the FALSE default)
      extension(OID.keyUsage, true, bitString(Uint8Array.of(0x80), 7)), // digitalSignature
      extension(OID.extKeyUsage, false, sequence(oid(OID.serverAuth))),
      extension(OID.authorityKeyIdentifier, false, sequence(implicit(0, issuerKeyId!))),
      ...common,
    ]
  }
  return [
    extension(OID.basicConstraints, true, sequence(boolean(true))),
    // digitalSignature (bit 0) + keyCertSign (bit 5): 0b1000_0100, two trailing unused bits.
    extension(OID.keyUsage, true, bitString(Uint8Array.of(0x84), 2)),
    extension(OID.extKeyUsage, false, sequence(oid(OID.serverAuth), oid(OID.clientAuth))),
    ...common,
  ]
}

const importSigningKey = (keyPem: string) =>
  crypto.subtle.importKey('pkcs8', new Uint8Array(pemToDer(keyPem, 'PRIVATE KEY')), { name: 'ECDSA', namedCurve: 'P-256' }, false, ['sign'])

/** A fresh P-256 key and a certificate for it, signed as `profile` says (self-signed by default). */
export async function generateKeyAndCert(opts: CertOptions, profile: CertProfile = { kind: 'self-signed' }): Promise<KeyAndCert> {
  if (!opts.commonName || !(opts.days > 0)) throw new MusterError('invalid-request', 'certificate: commonName and positive days required')
  const ipBytes = checkNames(opts)
  const serial = opts.serial ?? randomSerial()
  if (serial <= 0n || serial >= 1n << 159n) throw new MusterError('invalid-request', 'certificate: serial must be positive and at most 20 octets')

  const keys = await crypto.subtle.generateKey({ name: 'ECDSA', namedCurve: 'P-256' }, true, ['sign', 'verify'])
  const spki = new Uint8Array(await crypto.subtle.exportKey('spki', keys.publicKey))
  const pkcs8 = new Uint8Array(await crypto.subtle.exportKey('pkcs8', keys.privateKey))

  // Whole seconds: that is all the certificate can say, and callers compare this Date with it.
  const now = Math.floor((opts.now ?? Date.now()) / 1000) * 1000
  // The start never lies after the real time either, so TLS peers on the real clock accept it
  // while a caller's injected clock (tests) runs ahead.
  const notBefore = new Date(Math.min(now, Math.floor(Date.now() / 1000) * 1000) - BACKDATE_MS)
  let notAfter = new Date(now + Math.round(opts.days * DAY_MS))
  const subject = sequence(set(sequence(oid(OID.commonName), utf8String(opts.commonName))))
  let issuerName: Uint8Array = subject
  let issuerKeyId: Uint8Array | undefined
  let signer = keys.privateKey
  if (profile.kind === 'leaf') {
    const ca = parseCertificate(profile.issuer.certPem)
    issuerName = ca.subjectDer
    issuerKeyId = keyIdOf(ca.publicKeyDer)
    signer = await importSigningKey(profile.issuer.keyPem)
    // A leaf never outlives its CA: verifiers would refuse it from then on anyway.
    if (notAfter > ca.notAfter) notAfter = ca.notAfter
  }
  const sigAlg = sequence(oid(OID.ecdsaWithSha256))
  const sans = opts.dnsNames.length + ipBytes.length > 0
    ? sequence(...opts.dnsNames.map((n) => implicit(2, new TextEncoder().encode(n))), ...ipBytes.map((b) => implicit(7, b)))
    : undefined
  const tbs = sequence(
    explicit(0, integer(2)), // v3
    integer(serial),
    sigAlg,
    issuerName,
    sequence(x509Time(notBefore), x509Time(notAfter)),
    subject,
    spki,
    explicit(3, sequence(...extensionsFor(profile, spki, issuerKeyId, sans))),
  )
  const raw = new Uint8Array(await crypto.subtle.sign({ name: 'ECDSA', hash: 'SHA-256' }, signer, tbs))
  const der = sequence(tbs, sigAlg, bitString(ecdsaRawToDer(raw)))
  return {
    keyPem: derToPem(pkcs8, 'PRIVATE KEY'),
    certPem: derToPem(der),
    fingerprint: certFingerprint(der),
    notAfter,
  }
}

// ---------------------------------------------------------------- parsing

function readSans(tbsItems: DerNode[]): { dnsNames: string[]; ipAddresses: string[] } {
  const dnsNames: string[] = []
  const ipAddresses: string[] = []
  const exts = tbsItems.find((n) => n.tag === 0xa3)
  if (!exts) return { dnsNames, ipAddresses }
  for (const ext of children(expectTag(children(exts)[0], TAG.SEQUENCE))) {
    const parts = children(expectTag(ext, TAG.SEQUENCE))
    if (decodeOid(parts[0]!) !== OID.subjectAltName) continue
    const value = expectTag(parts[parts.length - 1], TAG.OCTET_STRING).value
    for (const gn of children(readDerExact(value))) {
      if (gn.tag === 0x82) dnsNames.push(new TextDecoder().decode(gn.value))
      const ip = gn.tag === 0x87 ? bytesToIp(gn.value) : undefined
      if (ip) ipAddresses.push(ip)
    }
  }
  return { dnsNames, ipAddresses }
}

/**
 * Reads what muster needs from a certificate. Throws the one invalid-request
 * error for anything that is not a certificate with a usable public key: this
 * runs on input from the network (an enrolling node's certPem).
 */
export function parseCertificate(pemOrDer: string | Uint8Array): ParsedCertificate {
  try {
    const der = typeof pemOrDer === 'string' ? pemToDer(pemOrDer) : pemOrDer
    // The runtime's parser (BoringSSL) judges the certificate first; ours only
    // reads fields from one it accepted (docs/security.md: input from anyone).
    new X509Certificate(der)
    const [tbs, sigAlg, sig] = children(expectTag(readDerExact(der), TAG.SEQUENCE))
    expectTag(sigAlg, TAG.SEQUENCE)
    decodeBitString(sig!)
    const items = children(expectTag(tbs, TAG.SEQUENCE))
    // version is an optional [0]; everything after it has a fixed position.
    const base = items[0]?.tag === 0xa0 ? 1 : 0
    const validity = children(expectTag(items[base + 3], TAG.SEQUENCE))
    const issuer = expectTag(items[base + 2], TAG.SEQUENCE).raw
    const subject = expectTag(items[base + 4], TAG.SEQUENCE).raw
    const spki = expectTag(items[base + 5], TAG.SEQUENCE).raw
    // The key must be one the platform could actually use, not just well-formed DER.
    createPublicKey({ key: Buffer.from(spki), format: 'der', type: 'spki' })
    const notBefore = decodeTime(validity[0]!)
    const notAfter = decodeTime(validity[1]!)
    return {
      der,
      fingerprint: certFingerprint(der),
      publicKeyDer: spki.slice(),
      issuerDer: issuer.slice(),
      subjectDer: subject.slice(),
      notBefore,
      notAfter,
      ...readSans(items.slice(base + 6)),
    }
  } catch {
    throw new MusterError('invalid-request', NOT_A_CERT)
  }
}

// ---------------------------------------------------------------- renewal checks

// Both helpers read an unparsable certificate as "renew": the file is one we
// generated, and generating a fresh one is the repair.

/** Whether every given DNS name and IP address is among the certificate's SANs. */
export function certCovers(certPem: string, want: { dnsNames?: string[]; ipAddresses?: string[] }): boolean {
  let cert: ParsedCertificate
  try {
    cert = parseCertificate(certPem)
  } catch {
    return false
  }
  const names = new Set(cert.dnsNames.map((n) => n.toLowerCase()))
  const ips = cert.ipAddresses.map((ip) => ipToBytes(ip)!)
  return (
    (want.dnsNames ?? []).every((n) => names.has(n.toLowerCase())) &&
    (want.ipAddresses ?? []).every((ip) => {
      const b = ipToBytes(ip)
      return b !== undefined && ips.some((have) => sameBytes(have, b))
    })
  )
}

/** Whether the certificate expires within `days` of `now` (or already has). */
export function expiresWithin(certPem: string, days: number, now: Date | number = Date.now()): boolean {
  try {
    return parseCertificate(certPem).notAfter.getTime() - new Date(now).getTime() <= days * DAY_MS
  } catch {
    return true
  }
}
