// Requests the Platform makes to an Agent: signed with a current trust key
// over method, path, body digest, node name and a timestamp, so a request is
// good for one node, one body and five minutes. The Platform signs with
// signAgentRequest; the Agent checks with verifyAgentRequest.
import { canonicalJson } from '../crypto/ed25519.ts'
import { sha256Hex } from '../crypto/tokens.ts'
import type { TrustKey } from '../wire/nodes.ts'
import { verifySignature, type TrustSigner } from './signed.ts'

export const AGENT_REQUEST_DOMAIN = 'muster agent request v1'
export const MAX_SKEW_MS = 5 * 60_000
export const SIGNATURE_HEADERS = { kid: 'x-muster-key', timestamp: 'x-muster-timestamp', signature: 'x-muster-signature' } as const

export interface AgentRequest {
  method: string
  /** Path and query, as sent. */
  path: string
  body: Uint8Array | string
  node: string
}

/** What is signed: one canonical JSON line. */
export function agentRequestMessage(r: AgentRequest, timestamp: number): string {
  const body = typeof r.body === 'string' ? new TextEncoder().encode(r.body) : r.body
  return canonicalJson({ method: r.method.toUpperCase(), path: r.path, bodySha256: sha256Hex(body), node: r.node, timestamp })
}

/** The headers that authenticate `r` to the Agent of `r.node`. */
export function signAgentRequest(sign: TrustSigner, r: AgentRequest, now: number): Record<string, string> {
  const { kid, signature } = sign(AGENT_REQUEST_DOMAIN, agentRequestMessage(r, now))
  return { [SIGNATURE_HEADERS.kid]: kid, [SIGNATURE_HEADERS.timestamp]: String(now), [SIGNATURE_HEADERS.signature]: signature }
}

/** `unknownKey`: the kid is not among the keys valid now (a refresh may help). */
export type RequestVerdict = { ok: true; kid: string } | { ok: false; reason: string; unknownKey?: true }

/** Checks the signature headers against the node's current trust keys. */
export function verifyAgentRequest(keys: readonly TrustKey[], headers: Headers, r: AgentRequest, now: number): RequestVerdict {
  const kid = headers.get(SIGNATURE_HEADERS.kid)
  const ts = headers.get(SIGNATURE_HEADERS.timestamp)
  const sig = headers.get(SIGNATURE_HEADERS.signature)
  if (!kid || !ts || !sig) return { ok: false, reason: 'unsigned request' }
  if (!/^\d{1,16}$/.test(ts)) return { ok: false, reason: 'bad timestamp' }
  const timestamp = Number(ts)
  if (Math.abs(now - timestamp) > MAX_SKEW_MS) return { ok: false, reason: 'timestamp outside ±5 minutes' }
  const v = verifySignature(AGENT_REQUEST_DOMAIN, 'request', keys, kid, sig, () => agentRequestMessage(r, timestamp), now)
  if (v.ok) return { ok: true, kid: v.kid }
  return v.unknownKey ? { ok: false, reason: 'unknown or expired key', unknownKey: true } : v
}
