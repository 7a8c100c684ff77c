// The Platform CA's certificate mathematics (docs/security.md): making the CA and
// the server certificates it issues, the pin (SHA-256 of the CA's
// SubjectPublicKeyInfo, the kubeadm CA-hash convention), and the checks that
// a certificate was issued by a given CA.
import { createPrivateKey, createPublicKey, X509Certificate } from 'node:crypto'
import { generateKeyAndCert, parseCertificate, pemToDer, type KeyAndCert } from './x509.ts'
import { sha256Hex } from './tokens.ts'

export const CA_LIFETIME_DAYS = 3650
export const CA_COMMON_NAME = 'muster platform CA'

/** `sha256:` + 64 lowercase hex of the certificate's DER SubjectPublicKeyInfo. */
export function spkiPin(pemOrDer: string | Uint8Array): string {
  return `sha256:${sha256Hex(parseCertificate(pemOrDer).publicKeyDer)}`
}

/** A new CA: its own key, self-signed, allowed to sign certificates only. */
export function generateCa(days = CA_LIFETIME_DAYS, now?: number): Promise<KeyAndCert> {
  return generateKeyAndCert({ commonName: CA_COMMON_NAME, dnsNames: [], ipAddresses: [], days, now }, { kind: 'ca' })
}

/** A server certificate for these names, issued by `ca` (never valid past the CA). */
export function issueServerCert(
  ca: { certPem: string; keyPem: string },
  opts: { commonName: string; dnsNames: string[]; ipAddresses: string[]; days: number; now?: number },
): Promise<KeyAndCert> {
  return generateKeyAndCert(opts, { kind: 'leaf', issuer: ca })
}

const x509 = (pemOrDer: string | Uint8Array) => new X509Certificate(typeof pemOrDer === 'string' ? pemOrDer : Buffer.from(pemOrDer))

/** Whether `child` names `parent` as its issuer and carries its signature. False for anything unreadable. */
export function isIssuedBy(child: string | Uint8Array, parent: string | Uint8Array): boolean {
  try {
    const c = x509(child)
    const p = x509(parent)
    return c.checkIssued(p) && c.verify(p.publicKey)
  } catch {
    return false
  }
}

/** A self-signed certificate: its own issuer, verified by its own key (the listener's certificate before the CA). */
export function isSelfSigned(pemOrDer: string | Uint8Array): boolean {
  return isIssuedBy(pemOrDer, pemOrDer)
}

/** Whether the private key belongs to the certificate. */
export function keyMatchesCert(certPem: string, keyPem: string): boolean {
  try {
    const fromKey = createPublicKey(createPrivateKey(keyPem)).export({ format: 'der', type: 'spki' })
    return Buffer.from(parseCertificate(certPem).publicKeyDer).equals(fromKey)
  } catch {
    return false
  }
}

/** Every certificate in a PEM text, in order (a chain as servers send it). */
export function splitPemChain(pem: string): string[] {
  return [...pem.matchAll(/-----BEGIN CERTIFICATE-----[A-Za-z0-9+/=\s]*?-----END CERTIFICATE-----\n?/g)].map((m) => {
    const block = m[0]
    pemToDer(block) // canonical base64 or throw
    return block.endsWith('\n') ? block : `${block}\n`
  })
}
