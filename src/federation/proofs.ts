// How the controller proves itself: the cluster signing key (kept only on the
// controller, platform/cluster-signing-key, 0600) signs every answer and every
// call it makes to an office, over the office id, the office's current token
// fingerprint and a fresh nonce, each under its own domain. The office checks
// with the public key its join token carried, offline.
import { canonicalJson, generateSigningKey, publicKeyFromPrivate, signDomain, verifyDomain, type SigningKey } from '../crypto/ed25519.ts'
import { b64url, fromB64url } from '../crypto/tokens.ts'
import { MusterError } from '../errors.ts'
import type { Vault } from '../context/vault.ts'
import type { DOMAINS } from '../wire/federation-formats.ts'

/** The cluster key's name in the Platform's vault (sealed in the store, shared by Platforms on one store). */
export const CLUSTER_KEY = 'cluster-signing-key'

type Domain = (typeof DOMAINS)[keyof typeof DOMAINS]

/** The fields every controller proof covers; the rest depend on the purpose. */
export interface ProofFields {
  officeId: string
  tokenFingerprint: string
  nonce: string
  [field: string]: unknown
}

/** Loads the controller's key, creating it on first need (exclusive create: two racing mints keep one key). */
export async function loadClusterKey(vault: Vault, create: boolean): Promise<SigningKey | undefined> {
  if (create) await vault.create(CLUSTER_KEY, b64url(generateSigningKey().privateKey))
  const text = await vault.get(CLUSTER_KEY)
  if (!text) return undefined
  const privateKey = fromB64url(text)
  if (privateKey.length !== 32) throw new MusterError('internal', 'The stored cluster signing key is not a 32-byte Ed25519 key; restore the store from backup.')
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
