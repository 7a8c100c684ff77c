// Proof of possession of the agent key (docs/security.md): an enroll — and a renewal
// from a rotated-away credential — carries the agent key's signature over what
// it asks for, so a copy of a node's public certificate is worth nothing.
//   enroll: UTF-8 of `muster-enroll-v1\n<nodeId>\n<token id>\n<cert sha256 hex>\n<proofTime>`
//   renew:  UTF-8 of `muster-renew-v1\n<nodeId>\n<credential generation>\n<cert sha256 hex>\n<proofTime>`
// ECDSA P-256 keys sign with SHA-256 (DER signature, as `openssl dgst -sha256
// -sign` makes it); Ed25519 keys sign the bytes raw. The proof is base64url
// without padding; proofTime is Unix seconds, within ±300 s of the verifier.
import { createPrivateKey, createPublicKey, sign, verify, type KeyObject } from 'node:crypto'
import { certFingerprint } from './x509.ts'

export const PROOF_WINDOW_SECONDS = 300
const PROOF = /^[A-Za-z0-9_-]{16,200}$/
const JOIN_TOKEN_ID = /^mjt_([a-z2-7]{16})\./

export interface EnrollProofFields {
  nodeId: string
  /** The 16-character id of the mjt_ token. */
  tokenId: string
  /** Lowercase hex SHA-256 of the certificate's DER. */
  certSha256: string
  /** Unix seconds. */
  proofTime: number
}

export interface RenewProofFields {
  nodeId: string
  /** The generation of the credential the renewal is asked with. */
  generation: number
  certSha256: string
  proofTime: number
}

export function enrollProofMessage(f: EnrollProofFields): Buffer {
  return Buffer.from(`muster-enroll-v1\n${f.nodeId}\n${f.tokenId}\n${f.certSha256}\n${f.proofTime}`, 'utf8')
}

export function renewProofMessage(f: RenewProofFields): Buffer {
  return Buffer.from(`muster-renew-v1\n${f.nodeId}\n${f.generation}\n${f.certSha256}\n${f.proofTime}`, 'utf8')
}

/** What an identity join's proof names in place of a token id: the cloud whose document it carries (docs/cloud.md). */
export const identityProofId = (provider: string) => `cloud-identity-${provider}`

/** The token id a join token names ('' for anything that is not one: the Platform refuses it anyway). */
export function joinTokenId(token: string): string {
  return JOIN_TOKEN_ID.exec(token.trim())?.[1] ?? ''
}

function signWith(keyPem: string, message: Buffer): string {
  const key = createPrivateKey(keyPem)
  if (key.asymmetricKeyType === 'ed25519') return sign(null, message, key).toString('base64url')
  if (key.asymmetricKeyType === 'ec') return sign('sha256', message, { key, dsaEncoding: 'der' }).toString('base64url')
  throw new Error(`agent keys are ECDSA P-256 or Ed25519, not ${key.asymmetricKeyType}`)
}

/** The enroll fields `proofTime` and `proof` for one request, signed now with the agent key (PKCS#8 PEM). */
export function signEnrollProof(o: { keyPem: string; certPem: string; nodeId: string; token?: string; tokenId?: string; nowMs?: number }): { proofTime: number; proof: string } {
  const proofTime = Math.floor((o.nowMs ?? Date.now()) / 1000)
  const fields = { nodeId: o.nodeId, tokenId: o.tokenId ?? joinTokenId(o.token ?? ''), certSha256: certSha256Hex(o.certPem), proofTime }
  return { proofTime, proof: signWith(o.keyPem, enrollProofMessage(fields)) }
}

export function signRenewProof(o: { keyPem: string; certPem: string; nodeId: string; generation: number; nowMs?: number }): { proofTime: number; proof: string } {
  const proofTime = Math.floor((o.nowMs ?? Date.now()) / 1000)
  return { proofTime, proof: signWith(o.keyPem, renewProofMessage({ nodeId: o.nodeId, generation: o.generation, certSha256: certSha256Hex(o.certPem), proofTime })) }
}

function certSha256Hex(certPem: string): string {
  return certFingerprint(certPem).slice('sha256:'.length)
}

/**
 * True when `proof` is the signature of `message` by the certificate's own key
 * (its SubjectPublicKeyInfo, as parseCertificate gives it) and `proofTime` is
 * within the window around `nowMs`. Never throws: anything malformed is simply
 * not a proof.
 */
export function verifyProof(publicKeyDer: Uint8Array, message: Buffer, proof: unknown, proofTime: unknown, nowMs: number): boolean {
  if (typeof proof !== 'string' || !PROOF.test(proof)) return false
  if (typeof proofTime !== 'number' || !Number.isSafeInteger(proofTime)) return false
  if (Math.abs(proofTime - nowMs / 1000) > PROOF_WINDOW_SECONDS) return false
  let key: KeyObject
  try {
    key = createPublicKey({ key: Buffer.from(publicKeyDer), format: 'der', type: 'spki' })
  } catch {
    return false
  }
  const algorithm = key.asymmetricKeyType === 'ed25519' ? null : key.asymmetricKeyType === 'ec' && key.asymmetricKeyDetails?.namedCurve === 'prime256v1' ? 'sha256' : undefined
  if (algorithm === undefined) return false
  // Verified on the event loop: one P-256 verify takes about 70 µs here, less than
  // the round trip to the thread pool it replaced (measured in bench/enroll-wrk.sh:
  // the enroll rate rose), and only holders of a valid token's secret reach it.
  try {
    return verify(algorithm, message, algorithm ? { key, dsaEncoding: 'der' } : key, Buffer.from(proof, 'base64url'))
  } catch {
    return false
  }
}
