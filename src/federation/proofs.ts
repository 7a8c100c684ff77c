// How the controller proves itself: the cluster signing key (kept only on the
// controller, platform/cluster-signing-key, 0600) signs every answer and every
// call it makes to an office, over the office id, the office's current token
// fingerprint and a fresh nonce, each under its own domain. The office checks
// with the public key its join token carried, offline.
import { canonicalJson, generateSigningKey, publicKeyFromPrivate, signDomain, verifyDomain, type SigningKey } from '../crypto/ed25519.ts'
import { b64url, fromB64url } from '../crypto/tokens.ts'
import type { DataDir } from '../datadir.ts'
import { MusterError } from '../errors.ts'
import type { DOMAINS } from './formats.ts'

export const CLUSTER_KEY_FILE = 'platform/cluster-signing-key'

type Domain = (typeof DOMAINS)[keyof typeof DOMAINS]

/** The fields every controller proof covers; the rest depend on the purpose. */
export interface ProofFields {
  officeId: string
  tokenFingerprint: string
  nonce: string
  [field: string]: unknown
}

/** Loads the controller's key, creating it on first need (exclusive create: two racing mints keep one key). */
export function loadClusterKey(dataDir: DataDir, create: boolean): SigningKey | undefined {
  if (create) dataDir.createSecretExclusive(CLUSTER_KEY_FILE, generateSigningKey().privateKey)
  const raw = dataDir.readSecret(CLUSTER_KEY_FILE)
  if (!raw) return undefined
  if (raw.length !== 32) throw new MusterError('insecure-permissions', `${dataDir.path(CLUSTER_KEY_FILE)} is not a 32-byte Ed25519 key; restore it from backup.`)
  const privateKey = new Uint8Array(raw)
  return { privateKey, publicKey: publicKeyFromPrivate(privateKey) }
}

export function signProof(domain: Domain, key: SigningKey, fields: ProofFields): string {
  return b64url(signDomain(domain, key.privateKey, canonicalJson(fields)))
}

export function verifyProof(domain: Domain, publicKey: Uint8Array, fields: ProofFields, proof: unknown): boolean {
  if (typeof proof !== 'string' || !/^[A-Za-z0-9_-]{86}$/.test(proof)) return false
  try {
    return verifyDomain(domain, publicKey, canonicalJson(fields), fromB64url(proof))
  } catch {
    return false // fields from the network that canonical JSON cannot encode verify nothing
  }
}
