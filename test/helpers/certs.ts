// Agent certificates for tests, made the way worker join makes them, and raw
// enrolls that prove possession of the key as worker join does (docs/security.md).
import { identityProofId, signEnrollProof } from '../../src/crypto/enroll-proof.ts'
import { generateKeyAndCert } from '../../src/crypto/x509.ts'
import { clockFor } from './clocks.ts'

/** The key of every certificate newCert made, so enrollRaw can sign for it. */
const keys = new Map<string, string>()

export async function newCert(name = 'node') {
  const kc = await generateKeyAndCert({ commonName: name, dnsNames: ['localhost'], ipAddresses: ['127.0.0.1'], days: 30 })
  keys.set(kc.certPem, kc.keyPem)
  return kc
}

/** The body with `proofTime` and `proof` signed by `keyPem` (at `nowMs`, default now). */
export function withProof<T extends { token: string; nodeId: string; certPem: string }>(body: T, keyPem: string, nowMs?: number): T & { proofTime: number; proof: string } {
  return { ...body, ...signEnrollProof({ keyPem, certPem: body.certPem, nodeId: body.nodeId, token: body.token, nowMs }) }
}

/**
 * POST /api/v1/nodes/enroll with a JSON body. A body without a `proof` key whose
 * certificate newCert made is signed with that certificate's key first, at the
 * Platform's (injected) time; give `proof` (even undefined) to send exactly what you wrote.
 */
export async function enrollRaw(url: string, body: unknown, opts: { nowMs?: number } = {}): Promise<Response> {
  let sent = body
  const b = body as { token?: unknown; identity?: { provider?: unknown }; nodeId?: unknown; certPem?: unknown } | null
  if (b && typeof b === 'object' && !('proof' in b) && typeof b.nodeId === 'string' && typeof b.certPem === 'string') {
    const keyPem = keys.get(b.certPem)
    // a join token's proof names its id; a cloud identity's names its cloud
    if (keyPem && typeof b.token === 'string') sent = withProof(b as { token: string; nodeId: string; certPem: string }, keyPem, opts.nowMs ?? clockFor(url))
    else if (keyPem && typeof b.identity?.provider === 'string') sent = { ...b, ...signEnrollProof({ keyPem, certPem: b.certPem, nodeId: b.nodeId, tokenId: identityProofId(b.identity.provider), nowMs: opts.nowMs ?? clockFor(url) }) }
  }
  return fetch(`${url}/api/v1/nodes/enroll`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(sent) })
}
