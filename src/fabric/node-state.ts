// What a node may learn about its own credential (docs/operations.md): `doctor`, the
// Agent and `worker join` ask the Platform whether the credential they hold
// still works and, when it does not, why. The caller sends its credential and
// the SHA-256 of the certificate it enrolled with: the credential's MAC covers
// both, so only a credential this Platform issued for that certificate learns
// anything; every other caller gets the one generic refusal a heartbeat gets.
import { MusterError } from '../errors.ts'
import { bearerToken } from '../auth/auth.ts'
import { parseCredential } from './credentials.ts'
import type { Fabric } from './fabric.ts'
import type { CredentialAnswer } from '../wire/nodes.ts'

const HEX64 = /^[0-9a-f]{64}$/

/**
 * 1. the credential's shape, 2. its MAC over the presented certificate (else
 * the generic refusal), 3. the node as the store has it now: gone, bound to
 * another certificate, revoked, or moved past this generation.
 */
export async function credentialState(fabric: Fabric, headers: Headers, body: unknown): Promise<CredentialAnswer> {
  const refused = () => new MusterError('unauthorized', 'Node credential not valid.')
  const c = parseCredential(bearerToken(headers) ?? '')
  if (!c) throw new MusterError('unauthorized', 'A node credential (Authorization: Bearer mnc_…) is required.')
  const certSha256 = (body as { certSha256?: unknown } | null)?.certSha256
  if (typeof certSha256 !== 'string' || !HEX64.test(certSha256)) throw new MusterError('invalid-request', 'Invalid certSha256: expected the SHA-256 (64 lowercase hex digits) of the certificate this node enrolled with', { field: 'certSha256' })
  const release = fabric.limits.heartbeat.admit()
  try {
    if (!fabric.credentials.verify(c, certSha256)) throw refused()
    // The store, not this Platform's memory: another Platform may have changed the node a moment ago.
    const n = await fabric.registry.refresh(c.name)
    const nodeId = c.name
    if (!n) return { nodeId, credential: 'removed' }
    if (n.certSha256 !== certSha256) return { nodeId, credential: 'rebound' }
    if (n.revokedAt !== null) return { nodeId, credential: 'revoked' }
    const current = c.generation === n.generation || (c.generation === n.generation - 1 && fabric.now() < n.previousValidUntil)
    if (!current) return { nodeId, credential: 'superseded' }
    return { nodeId, credential: 'valid', ...fabric.registry.state(n) }
  } finally {
    release()
  }
}
