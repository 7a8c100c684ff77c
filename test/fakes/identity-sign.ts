// What the clouds sign, made by the tests with CAs the tests make: RSA
// certificates (a root, an intermediate, a signer), PKCS#7 SignedData the way
// each cloud sends it — AWS's rsa2048 in BER with indefinite lengths, a
// constructed OCTET STRING and signed attributes; Azure's attested data in DER
// with the signer's certificate in the bag, no signed attributes and
// sha256WithRSAEncryption as its digest algorithm — and GCP's RS256 identity JWT.
import { AsnConvert, OctetString } from '@peculiar/asn1-schema'
import { Attribute, CertificateChoices, CertificateSet, ContentInfo, EncapsulatedContent, EncapsulatedContentInfo, IssuerAndSerialNumber, SignedData, SignerIdentifier, SignerInfo, SignerInfos, DigestAlgorithmIdentifiers } from '@peculiar/asn1-cms'
import {
  AccessDescription,
  AlgorithmIdentifier,
  AuthorityInfoAccessSyntax,
  id_ad_caIssuers,
  id_pe_authorityInfoAccess,
  AttributeTypeAndValue,
  AttributeValue,
  BasicConstraints,
  Certificate,
  Extension,
  Extensions,
  GeneralName,
  Name,
  RelativeDistinguishedName,
  SubjectAlternativeName,
  SubjectKeyIdentifier,
  SubjectPublicKeyInfo,
  TBSCertificate,
  Validity,
  id_ce_basicConstraints,
  id_ce_subjectAltName,
  id_ce_subjectKeyIdentifier,
} from '@peculiar/asn1-x509'
import { createHash, generateKeyPairSync, randomBytes, sign, type KeyObject } from 'node:crypto'
import { SignJWT, importPKCS8 } from 'jose'

const SHA256_RSA = '1.2.840.113549.1.1.11'
const RSA = '1.2.840.113549.1.1.1'
const SHA256 = '2.16.840.1.101.3.4.2.1'

export interface TestCert {
  pem: string
  der: Uint8Array
  key: KeyObject
  keyPem: string
  cert: Certificate
}

const pem = (der: Uint8Array, label: string) => `-----BEGIN ${label}-----\n${Buffer.from(der).toString('base64').replace(/(.{64})/g, '$1\n').replace(/\n$/, '')}\n-----END ${label}-----\n`

function name(cn: string, o = 'muster tests'): Name {
  const rdn = (type: string, value: string) => new RelativeDistinguishedName([new AttributeTypeAndValue({ type, value: new AttributeValue({ utf8String: value }) })])
  return new Name([rdn('2.5.4.10', o), rdn('2.5.4.3', cn)])
}

/** An RSA-2048 certificate: self-signed unless `issuer` is given; a CA when `ca`; DNS names in its SAN; `caIssuers`: its issuer's certificate URL (AIA). */
export function makeCert(o: { cn: string; o?: string; issuer?: TestCert; ca?: boolean; dns?: string[]; notBefore?: Date; notAfter?: Date; serial?: Uint8Array; caIssuers?: string }): TestCert {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 })
  const spki = AsnConvert.parse(publicKey.export({ type: 'spki', format: 'der' }), SubjectPublicKeyInfo)
  const subject = name(o.cn, o.o)
  const ski = createHash('sha1').update(Buffer.from(spki.subjectPublicKey)).digest()
  const extensions = new Extensions([
    new Extension({ extnID: id_ce_basicConstraints, critical: true, extnValue: new OctetString(AsnConvert.serialize(new BasicConstraints({ cA: o.ca === true }))) }),
    new Extension({ extnID: id_ce_subjectKeyIdentifier, critical: false, extnValue: new OctetString(AsnConvert.serialize(new SubjectKeyIdentifier(ski))) }),
    ...(o.caIssuers ? [new Extension({ extnID: id_pe_authorityInfoAccess, critical: false, extnValue: new OctetString(AsnConvert.serialize(new AuthorityInfoAccessSyntax([new AccessDescription({ accessMethod: id_ad_caIssuers, accessLocation: new GeneralName({ uniformResourceIdentifier: o.caIssuers }) })]))) })] : []),
    ...(o.dns?.length ? [new Extension({ extnID: id_ce_subjectAltName, critical: false, extnValue: new OctetString(AsnConvert.serialize(new SubjectAlternativeName(o.dns.map((d) => new GeneralName({ dNSName: d }))))) })] : []),
  ])
  const serial = o.serial ?? Uint8Array.from([0x01, ...randomBytes(8)])
  const tbs = new TBSCertificate({
    version: 2,
    serialNumber: serial.buffer.slice(serial.byteOffset, serial.byteOffset + serial.byteLength) as ArrayBuffer,
    signature: new AlgorithmIdentifier({ algorithm: SHA256_RSA, parameters: null }),
    issuer: o.issuer ? o.issuer.cert.tbsCertificate.subject : subject,
    validity: new Validity({ notBefore: o.notBefore ?? new Date(Date.now() - 3600_000), notAfter: o.notAfter ?? new Date(Date.now() + 365 * 86400_000) }),
    subject,
    subjectPublicKeyInfo: spki,
    extensions,
  })
  const tbsDer = AsnConvert.serialize(tbs)
  const signature = sign('sha256', Buffer.from(tbsDer), o.issuer?.key ?? privateKey)
  const cert = new Certificate({ tbsCertificate: tbs, signatureAlgorithm: new AlgorithmIdentifier({ algorithm: SHA256_RSA, parameters: null }), signatureValue: signature.buffer.slice(signature.byteOffset, signature.byteOffset + signature.byteLength) as ArrayBuffer })
  const der = new Uint8Array(AsnConvert.serialize(cert))
  return { pem: pem(der, 'CERTIFICATE'), der, key: privateKey, keyPem: privateKey.export({ type: 'pkcs8', format: 'pem' }) as string, cert }
}

// ---- DER/BER pieces ----------------------------------------------------------

function len(n: number): Buffer {
  if (n < 0x80) return Buffer.from([n])
  const b: number[] = []
  for (let x = n; x > 0; x = Math.floor(x / 256)) b.unshift(x & 0xff)
  return Buffer.from([0x80 | b.length, ...b])
}
const tlv = (tag: number, body: Uint8Array) => Buffer.concat([Buffer.from([tag]), len(body.length), body])
const indefinite = (tag: number, ...body: Uint8Array[]) => Buffer.concat([Buffer.from([tag, 0x80]), ...body, Buffer.from([0, 0])])

function oidDer(o: string): Buffer {
  const parts = o.split('.').map(Number)
  const body: number[] = [parts[0]! * 40 + parts[1]!]
  for (const p of parts.slice(2)) {
    const chunk: number[] = []
    let x = p
    do {
      chunk.unshift(x & 0x7f)
      x = Math.floor(x / 128)
    } while (x > 0)
    for (let i = 0; i < chunk.length - 1; i++) chunk[i]! |= 0x80
    body.push(...chunk)
  }
  return tlv(0x06, Uint8Array.from(body))
}

export interface SignOptions {
  content: Uint8Array
  signer: TestCert
  /** Certificates carried in the document (AWS carries none). */
  bag?: TestCert[]
  /** contentType, signingTime, messageDigest (AWS); none (Azure). */
  signedAttributes?: boolean
  /** The digest algorithm OID written (Azure writes sha256WithRSAEncryption). */
  digestOid?: string
  /** Name another certificate as the signer (the signature still by `signer`'s key). */
  claimAs?: TestCert
  /** Override the content digested into messageDigest (a document whose content was swapped after signing). */
  contentSigned?: Uint8Array
}

function signerInfo(o: SignOptions): SignerInfo {
  const named = (o.claimAs ?? o.signer).cert.tbsCertificate
  const digestOid = o.digestOid ?? SHA256
  const sid = new SignerIdentifier({ issuerAndSerialNumber: new IssuerAndSerialNumber({ issuer: named.issuer, serialNumber: named.serialNumber }) })
  const contentDigest = createHash('sha256').update(o.contentSigned ?? o.content).digest()
  let signedAttrs: Attribute[] | undefined
  let toSign: Uint8Array = o.contentSigned ?? o.content
  if (o.signedAttributes) {
    const now = new Date()
    const utc = `${String(now.getUTCFullYear()).slice(2)}${[now.getUTCMonth() + 1, now.getUTCDate(), now.getUTCHours(), now.getUTCMinutes(), now.getUTCSeconds()].map((n) => String(n).padStart(2, '0')).join('')}Z`
    signedAttrs = [
      new Attribute({ attrType: '1.2.840.113549.1.9.3', attrValues: [toAb(oidDer('1.2.840.113549.1.7.1'))] }),
      new Attribute({ attrType: '1.2.840.113549.1.9.5', attrValues: [toAb(tlv(0x17, Buffer.from(utc)))] }),
      new Attribute({ attrType: '1.2.840.113549.1.9.4', attrValues: [toAb(tlv(0x04, contentDigest))] }),
    ]
    toSign = tlv(0x31, Buffer.concat(signedAttrs.map((a) => Buffer.from(AsnConvert.serialize(a)))))
  }
  const signature = sign('sha256', Buffer.from(toSign), o.signer.key)
  return new SignerInfo({
    version: 1,
    sid,
    digestAlgorithm: new AlgorithmIdentifier({ algorithm: digestOid, parameters: null }),
    ...(signedAttrs ? { signedAttrs } : {}),
    signatureAlgorithm: new AlgorithmIdentifier({ algorithm: RSA, parameters: null }),
    signature: new OctetString(signature),
  })
}

const toAb = (b: Uint8Array) => b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength) as ArrayBuffer

/** A DER SignedData (Azure's shape by default: the signer in the bag, no signed attributes). */
export function signDer(o: SignOptions): Uint8Array {
  const si = signerInfo(o)
  const sd = new SignedData({
    version: 1,
    digestAlgorithms: new DigestAlgorithmIdentifiers([new AlgorithmIdentifier({ algorithm: o.digestOid ?? SHA256, parameters: null })]),
    encapContentInfo: new EncapsulatedContentInfo({ eContentType: '1.2.840.113549.1.7.1', eContent: new EncapsulatedContent({ single: new OctetString(o.content) }) }),
    certificates: new CertificateSet((o.bag ?? []).map((c) => new CertificateChoices({ certificate: c.cert }))),
    signerInfos: new SignerInfos([si]),
  })
  return new Uint8Array(AsnConvert.serialize(new ContentInfo({ contentType: '1.2.840.113549.1.7.2', content: AsnConvert.serialize(sd) })))
}

/**
 * AWS's rsa2048 shape: ContentInfo, its [0], SignedData, the encapsulated content and its [0] with
 * indefinite lengths, the content as a constructed OCTET STRING of one chunk, no certificates, one
 * SignerInfo with signed attributes (contentType, signingTime, messageDigest), SHA-256.
 */
export function signAwsBer(o: Omit<SignOptions, 'signedAttributes' | 'bag'>): Uint8Array {
  const si = Buffer.from(AsnConvert.serialize(new SignerInfos([signerInfo({ ...o, signedAttributes: true })])))
  const digestAlgs = tlv(0x31, tlv(0x30, Buffer.concat([oidDer(o.digestOid ?? SHA256), Buffer.from([0x05, 0x00])])))
  const encap = indefinite(0x30, oidDer('1.2.840.113549.1.7.1'), indefinite(0xa0, indefinite(0x24, tlv(0x04, o.content))))
  const signedData = indefinite(0x30, Buffer.from([0x02, 0x01, 0x01]), digestAlgs, encap, si)
  return new Uint8Array(indefinite(0x30, oidDer('1.2.840.113549.1.7.2'), indefinite(0xa0, signedData)))
}

/** The base64 the metadata service answers (64-character lines, as AWS sends the rsa2048 document). */
export const base64Lines = (b: Uint8Array) => Buffer.from(b).toString('base64').replace(/(.{64})/g, '$1\n').replace(/\n$/, '')

/** A GCP instance identity token (format=full), RS256 with `kid`. */
export async function signGcpToken(key: TestCert, kid: string, claims: Record<string, unknown>, o: { expiresInS?: number; issuedAt?: number } = {}): Promise<string> {
  const iat = o.issuedAt ?? Math.floor(Date.now() / 1000)
  return new SignJWT(claims)
    .setProtectedHeader({ alg: 'RS256', kid, typ: 'JWT' })
    .setIssuedAt(iat)
    .setExpirationTime(iat + (o.expiresInS ?? 3600))
    .sign(await importPKCS8(key.keyPem, 'RS256'))
}
