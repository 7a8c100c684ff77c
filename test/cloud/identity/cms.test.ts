// The CMS checks on their own: BER as AWS sends it, DER as Azure sends it, and
// every way a document can claim a signature it does not have.
import { describe, expect, test } from 'bun:test'
import { CmsError, parseSignedData, signerCertificate, verifiedContent } from '../../../src/cloud/identity/cms.ts'
import { makeCert, signAwsBer, signDer } from '../../fakes/identity-sign.ts'

const region = makeCert({ cn: 'aws region test' })
const other = makeCert({ cn: 'another region' })
const content = new TextEncoder().encode('{"instanceId":"i-0abc"}')

describe('CMS SignedData', () => {
  test('AWS-shaped BER (indefinite lengths, constructed OCTET STRING, signed attributes) verifies against its signer', () => {
    const doc = parseSignedData(signAwsBer({ content, signer: region }))
    expect(Buffer.from(doc.content).toString()).toBe('{"instanceId":"i-0abc"}')
    expect(doc.signedAttributes).not.toBeNull()
    expect(Buffer.from(verifiedContent(doc, region.der)).toString()).toContain('i-0abc')
  })
  test('another certificate is refused, whatever the document names', () => {
    const doc = parseSignedData(signAwsBer({ content, signer: other }))
    expect(() => verifiedContent(doc, region.der)).toThrow(CmsError)
    // signed by another key while naming the region's certificate: the signature fails
    const claimed = parseSignedData(signAwsBer({ content, signer: other, claimAs: region }))
    expect(() => verifiedContent(claimed, region.der)).toThrow('the signature does not verify')
  })
  test('a swapped content fails the message digest', () => {
    const doc = parseSignedData(signAwsBer({ content, signer: region, contentSigned: new TextEncoder().encode('{"instanceId":"i-0def"}') }))
    expect(() => verifiedContent(doc, region.der)).toThrow('message digest differs')
  })
  test('Azure-shaped DER: no signed attributes, sha256WithRSAEncryption as digest, signer in the bag', () => {
    const der = signDer({ content, signer: region, bag: [other, region], digestOid: '1.2.840.113549.1.1.11' })
    const doc = parseSignedData(der)
    expect(doc.signedAttributes).toBeNull()
    expect(Buffer.from(signerCertificate(doc)!).equals(Buffer.from(region.der))).toBe(true)
    expect(Buffer.from(verifiedContent(doc, region.der)).toString()).toContain('i-0abc')
    // the first certificate of the bag did not sign
    expect(() => verifiedContent(doc, other.der)).toThrow('the signer is not the certificate checked')
  })
  test('garbage and detached signatures are refused', () => {
    expect(() => parseSignedData(new Uint8Array([1, 2, 3]))).toThrow(CmsError)
  })
})
