// Documents and requests signed with the Platform's trust keys: the one place
// that signs and the one that verifies, below the Platform and the Agent both.
// Every signature covers its purpose's domain string (what it is for and its
// version: `muster assignments v1`), so nothing signed for one purpose
// verifies for another. A document is for one node and its payload passes
// its purpose's schema before anything uses it. A new purpose (a rollout
// directive, say) is one `purpose(domain, noun, schema)` in
// src/signed/documents.ts; docs/architecture.md says where it is used.
import * as v from 'valibot'
import { canonicalJson, verifyDomain } from '../crypto/ed25519.ts'
import { fromB64url } from '../crypto/tokens.ts'
import type { SignedDocument } from '../wire/projects.ts'
import type { TrustKey } from '../wire/nodes.ts'
import { validAt } from './keys.ts'

/** What is signed for one purpose: its domain string, what a refusal calls it, and the shape its payload must have. */
export interface Purpose<P> {
  readonly domain: string
  readonly noun: string
  readonly schema: v.GenericSchema
  /** The payload's type (never set: it only carries P). */
  readonly payload?: P
}

export function purpose<P>(domain: string, noun: string, schema: v.GenericSchema): Purpose<P> {
  return { domain, noun, schema }
}

/** A signer shaped like the Platform's TrustKeys.sign: the current key's id and its signature. */
export type TrustSigner = (domain: string, message: string) => { kid: string; signature: string }

/** `unknownKey`: the kid is not among the keys valid now (a trust refresh may help). */
export type Verdict<T> = { ok: true; value: T; kid: string } | { ok: false; reason: string; unknownKey?: true }

const SIGNATURE = /^[A-Za-z0-9_-]{86}$/

/** The bytes a document's signature covers: its payload as canonical JSON. */
export const documentBytes = (payload: unknown): string => canonicalJson(payload)

/** Signs `payload` for `p` with the key the schedule names for now. */
export function signDocument<P>(p: Purpose<P>, sign: TrustSigner, payload: P): SignedDocument<P> {
  return { payload, ...sign(p.domain, documentBytes(payload)) }
}

/**
 * Checks a signature by `kid` over `message()` under `domain` against the
 * trust keys, at `now`; `message` throwing means a malformed `noun`.
 */
export function verifySignature(domain: string, noun: string, keys: readonly TrustKey[], kid: string, signature: string, message: () => string, now: number): Verdict<string> {
  const key = keys.find((k) => k.kid === kid)
  if (!key) return { ok: false, reason: `signed by unknown key ${kid}`, unknownKey: true }
  if (!validAt(key, now)) return { ok: false, reason: `key ${kid} is not valid now`, unknownKey: true }
  let bytes: string
  try {
    bytes = message()
  } catch {
    return { ok: false, reason: `malformed ${noun}` }
  }
  if (!SIGNATURE.test(signature)) return { ok: false, reason: 'bad signature' }
  if (!verifyDomain(domain, fromB64url(key.publicKey), bytes, fromB64url(signature))) return { ok: false, reason: 'bad signature' }
  return { ok: true, value: bytes, kid }
}

/** Why `doc` is refused, or the document: signed for `kind` by a key valid at `now`, for `node`, its payload of `kind`'s shape. */
export function verifyDocument<P>(kind: Purpose<P>, doc: unknown, keys: readonly TrustKey[], node: string, now: number): Verdict<SignedDocument<P>> {
  const d = doc as Partial<SignedDocument<unknown>> | null
  if (!d || typeof d !== 'object' || !d.payload || typeof d.kid !== 'string' || typeof d.signature !== 'string') return { ok: false, reason: `unsigned or malformed ${kind.noun}` }
  const payload = d.payload
  const signed = verifySignature(kind.domain, kind.noun, keys, d.kid, d.signature, () => documentBytes(payload), now)
  if (!signed.ok) return signed
  const p = payload as { node?: unknown }
  if (p.node !== node) return { ok: false, reason: `${kind.noun} is for node ${String(p.node)}, not ${node}` }
  if (!v.is(kind.schema, payload)) return { ok: false, reason: `malformed ${kind.noun}` }
  return { ok: true, value: d as SignedDocument<P>, kid: d.kid }
}
