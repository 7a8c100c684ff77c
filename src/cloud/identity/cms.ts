// The one place a PKCS#7 / CMS SignedData is read and its signature checked
// (AWS's rsa2048 document, Azure's attested data). Parsing is the libraries'
// (@peculiar/asn1-cms for the structure, asn1js for BER: AWS sends indefinite
// lengths and a constructed OCTET STRING); the checks are here, in order:
//   1. exactly one SignerInfo, attached content of type id-data
//   2. the certificate the caller checks is the one the SignerInfo names
//      (issuer and serial, or subject key id): a bag certificate that did not
//      sign proves nothing (docs/cloud.md)
//   3. with signed attributes: content type id-data and one message digest equal
//      to the content's; the signature covers the attributes' DER as signed
//   4. an RSA PKCS#1 v1.5 signature with SHA-256/384/512 by that certificate's key
// The content is returned only from a document whose signature holds.
import * as asn1js from 'asn1js'
import { AsnConvert } from '@peculiar/asn1-schema'
import { ContentInfo, SignedData, type SignerInfo } from '@peculiar/asn1-cms'
import { Certificate, id_ce_subjectKeyIdentifier, SubjectKeyIdentifier } from '@peculiar/asn1-x509'
import { createHash, verify, X509Certificate } from 'node:crypto'

export class CmsError extends Error {}

const ID_SIGNED_DATA = '1.2.840.113549.1.7.2'
const ID_DATA = '1.2.840.113549.1.7.1'
const ATTR_CONTENT_TYPE = '1.2.840.113549.1.9.3'
const ATTR_MESSAGE_DIGEST = '1.2.840.113549.1.9.4'
const RSA_ENCRYPTION = '1.2.840.113549.1.1.1'

/** Digest algorithm OIDs, and the RSA-with-SHA ones some signers put there (Azure's attested data does). */
const DIGESTS: Record<string, 'sha256' | 'sha384' | 'sha512'> = {
  '2.16.840.1.101.3.4.2.1': 'sha256',
  '2.16.840.1.101.3.4.2.2': 'sha384',
  '2.16.840.1.101.3.4.2.3': 'sha512',
  '1.2.840.113549.1.1.11': 'sha256',
  '1.2.840.113549.1.1.12': 'sha384',
  '1.2.840.113549.1.1.13': 'sha512',
}
const RSA_WITH: Record<string, 'sha256' | 'sha384' | 'sha512'> = { '1.2.840.113549.1.1.11': 'sha256', '1.2.840.113549.1.1.12': 'sha384', '1.2.840.113549.1.1.13': 'sha512' }

export interface SignedDocument {
  /** The signed content as sent: trusted only once `verifiedContent` answered it. */
  readonly content: Uint8Array
  readonly signer: SignerInfo
  /** The DER of the SET of signed attributes as signed (tag 0x31), when there are any. */
  readonly signedAttributes: Uint8Array | null
  /** The certificates the document carries (DER), in the order given: which one signed is the SignerInfo's to say. */
  readonly certificates: Uint8Array[]
}

const bytes = (b: ArrayBuffer | ArrayBufferView) => (b instanceof ArrayBuffer ? new Uint8Array(b) : new Uint8Array(b.buffer, b.byteOffset, b.byteLength))

/** The octets of an OCTET STRING, primitive or constructed (BER chunks, nested). */
function octets(node: asn1js.AsnType): Uint8Array {
  if (!(node instanceof asn1js.OctetString)) throw new CmsError('the content is not an OCTET STRING')
  if (!node.idBlock.isConstructed) return bytes(node.valueBlock.valueHexView)
  const parts = (node.valueBlock.value as asn1js.AsnType[]).map(octets)
  return new Uint8Array(Buffer.concat(parts))
}

function ber(data: Uint8Array | ArrayBuffer): asn1js.AsnType {
  const view = bytes(data)
  const r = asn1js.fromBER(view)
  if (r.offset === -1) throw new CmsError(`not BER: ${r.result.error}`)
  return r.result
}

/** The raw [0] IMPLICIT signed attributes of the (only) SignerInfo, read from the BER as it was sent. */
function rawSignedAttributes(signedDataBer: Uint8Array): Uint8Array | null {
  const sd = ber(signedDataBer) as asn1js.Sequence
  const items = sd.valueBlock.value
  const infos = items[items.length - 1] as asn1js.Set | undefined
  const info = infos?.valueBlock.value[0] as asn1js.Sequence | undefined
  const attrs = info?.valueBlock.value.find((e) => e.idBlock.tagClass === 3 && e.idBlock.tagNumber === 0)
  if (!attrs) return null
  const raw = new Uint8Array(attrs.valueBeforeDecodeView)
  raw[0] = 0x31 // signed as a SET OF (RFC 5652 §5.4), sent [0] IMPLICIT
  return raw
}

/** Reads a SignedData (DER or BER). Throws CmsError for anything else, or for more (or fewer) than one signer. */
export function parseSignedData(data: Uint8Array): SignedDocument {
  let ci: ContentInfo
  let sd: SignedData
  try {
    ci = AsnConvert.parse(data, ContentInfo)
    if (ci.contentType !== ID_SIGNED_DATA) throw new CmsError('not a SignedData')
    sd = AsnConvert.parse(ci.content, SignedData)
  } catch (e) {
    throw e instanceof CmsError ? e : new CmsError(`not a PKCS#7 SignedData (${(e as Error).message})`)
  }
  if (sd.signerInfos.length !== 1) throw new CmsError(`${sd.signerInfos.length} signers; expected exactly one`)
  if (sd.encapContentInfo.eContentType !== ID_DATA) throw new CmsError('the content is not of type data')
  const e = sd.encapContentInfo.eContent
  if (!e) throw new CmsError('no content (a detached signature)')
  const content = e.single ? bytes(e.single.buffer) : e.any ? octets(ber(e.any)) : null
  if (!content) throw new CmsError('no content')
  const signer = sd.signerInfos[0]!
  const certificates = (sd.certificates ?? []).flatMap((c) => (c.certificate ? [new Uint8Array(AsnConvert.serialize(c.certificate))] : []))
  return { content, signer, signedAttributes: signer.signedAttrs ? rawSignedAttributes(bytes(ci.content)) : null, certificates }
}

const unsigned = (b: Uint8Array) => {
  let i = 0
  while (i < b.length - 1 && b[i] === 0) i++
  return Buffer.from(b.subarray(i))
}

/** True when the SignerInfo names this certificate: its issuer and serial number, or its subject key identifier. */
export function namesCertificate(signer: SignerInfo, certDer: Uint8Array): boolean {
  let cert: Certificate
  try {
    cert = AsnConvert.parse(certDer, Certificate)
  } catch {
    return false
  }
  const tbs = cert.tbsCertificate
  const byIssuer = signer.sid.issuerAndSerialNumber
  if (byIssuer) {
    const sameIssuer = Buffer.from(AsnConvert.serialize(byIssuer.issuer)).equals(Buffer.from(AsnConvert.serialize(tbs.issuer)))
    return sameIssuer && unsigned(bytes(byIssuer.serialNumber)).equals(unsigned(bytes(tbs.serialNumber)))
  }
  const ski = signer.sid.subjectKeyIdentifier
  if (ski) {
    const ext = tbs.extensions?.find((x) => x.extnID === id_ce_subjectKeyIdentifier)
    if (!ext) return false
    const own = AsnConvert.parse(ext.extnValue, SubjectKeyIdentifier)
    return Buffer.from(bytes(own.buffer)).equals(Buffer.from(bytes(ski.buffer)))
  }
  return false
}

/** The certificate of the document's bag that its SignerInfo names; null when none (or more than one) does. */
export function signerCertificate(doc: SignedDocument): Uint8Array | null {
  const named = doc.certificates.filter((c) => namesCertificate(doc.signer, c))
  return named.length === 1 ? named[0]! : null
}

/**
 * The content, once the document's one signature is checked against `certDer`,
 * which the SignerInfo must name. Throws CmsError with the reason otherwise.
 */
export function verifiedContent(doc: SignedDocument, certDer: Uint8Array): Uint8Array {
  // 2. the certificate checked is the one that signed
  if (!namesCertificate(doc.signer, certDer)) throw new CmsError('the signer is not the certificate checked')
  const hash = DIGESTS[doc.signer.digestAlgorithm.algorithm]
  if (!hash) throw new CmsError(`digest algorithm ${doc.signer.digestAlgorithm.algorithm} is not accepted`)
  const sigAlg = doc.signer.signatureAlgorithm.algorithm
  if (sigAlg !== RSA_ENCRYPTION && RSA_WITH[sigAlg] !== hash) throw new CmsError(`signature algorithm ${sigAlg} is not accepted`)
  // 3. what the signature covers
  let signed: Uint8Array = doc.content
  if (doc.signer.signedAttrs) {
    const attrs = doc.signer.signedAttrs
    const one = (oid: string) => {
      const found = attrs.filter((a) => a.attrType === oid)
      if (found.length !== 1 || found[0]!.attrValues.length !== 1) throw new CmsError(`signed attribute ${oid} missing or repeated`)
      return bytes(found[0]!.attrValues[0]!)
    }
    const type = asn1js.fromBER(one(ATTR_CONTENT_TYPE)).result
    if (!(type instanceof asn1js.ObjectIdentifier) || type.valueBlock.toString() !== ID_DATA) throw new CmsError('signed content type is not data')
    const digest = ber(one(ATTR_MESSAGE_DIGEST))
    if (!(digest instanceof asn1js.OctetString) || !Buffer.from(octets(digest)).equals(createHash(hash).update(doc.content).digest())) throw new CmsError('the content is not what was signed (message digest differs)')
    if (!doc.signedAttributes) throw new CmsError('signed attributes unreadable')
    signed = doc.signedAttributes
  }
  // 4. the signature, by that certificate's key
  let key: X509Certificate['publicKey']
  try {
    key = new X509Certificate(Buffer.from(certDer)).publicKey
  } catch {
    throw new CmsError('the certificate checked does not parse')
  }
  if (key.asymmetricKeyType !== 'rsa' || (key.asymmetricKeyDetails?.modulusLength ?? 0) < 2048) throw new CmsError('the signer key is not RSA of 2048 bits or more')
  let ok = false
  try {
    ok = verify(hash, signed, key, Buffer.from(bytes(doc.signer.signature.buffer)))
  } catch {
    ok = false
  }
  if (!ok) throw new CmsError('the signature does not verify')
  return doc.content
}
