// Calls the controller makes to an office. Each is signed with the cluster key
// over the office id, the office's current token fingerprint, a fresh nonce,
// the time and the whole payload; the office verifies offline, refuses a stale
// or repeated nonce, and only then acts.
import { b64url, randomBytes } from '../crypto/tokens.ts'
import { createTransport } from '../client/http.ts'
import { MusterError } from '../errors.ts'
import type { Db } from '../store/db.ts'
import type { Controller } from './controller.ts'
import { DOMAINS } from '../wire/federation-formats.ts'
import type { Membership } from './membership.ts'
import { spendNonce } from './office-store.ts'
import type { PlacedProjectSpec } from './placed-projects.ts'
import { signProof, verifyProof } from './proofs.ts'
import type { ControllerCall } from '../wire/federation.ts'
import type { OfficePlaced } from '../wire/federation.ts'

/** A call older or newer than this is refused; clocks of federated Platforms should agree to within it. */
export const CALL_WINDOW_MS = 120_000

export async function sendPlaceCall(controller: Controller, officeId: string, spec: PlacedProjectSpec, now: number): Promise<OfficePlaced> {
  const target = await controller.callTarget(officeId)
  const call = { call: 'place' as const, officeId, nonce: b64url(randomBytes(32)), issuedAt: now, payload: spec }
  const proof = signProof(DOMAINS.call, target.key, { ...call, tokenFingerprint: target.fingerprint })
  try {
    const transport = createTransport({ url: target.url, fetch: (u, init) => fetch(u, { ...init, signal: AbortSignal.timeout(10_000) }) })
    return await transport('POST', '/api/office/calls', { ...call, proof })
  } catch (e) {
    if (e instanceof MusterError && e.code === 'platform-unreachable') throw new MusterError('office-unreachable', `Office '${officeId}' at ${target.url} is unreachable: ${e.message}`)
    if (e instanceof MusterError) throw new MusterError(e.code, `Office '${officeId}' refused: ${e.message}`, e.detail)
    throw e
  }
}

/**
 * What an office checks before it acts on a controller call:
 *   1. it is joined (a membership to verify with)
 *   2. the call names this office
 *   3. it was issued within the window
 *   4. the proof verifies under the controller key and this office's token fingerprint
 *   5. its nonce was never used (spent now, pruned after the window)
 * Every refusal is the same answer; the reason is for the office's log.
 */
export async function acceptCall(db: Db, membership: Membership | undefined, call: ControllerCall, rawPayload: unknown, now: number): Promise<{ ok: true } | { refused: string }> {
  if (!membership) return { refused: 'not an office' }
  if (call.officeId !== membership.token.officeId) return { refused: `call for office ${call.officeId}` }
  if (Math.abs(now - call.issuedAt) > CALL_WINDOW_MS) return { refused: 'outside the time window' }
  // Verified over the payload as sent, not as parsed, so defaults filled in here cannot change what was signed.
  const signed = { call: call.call, officeId: call.officeId, nonce: call.nonce, issuedAt: call.issuedAt, payload: rawPayload, tokenFingerprint: membership.fingerprint }
  if (!verifyProof(DOMAINS.call, membership.token.controllerKey, signed, call.proof)) return { refused: 'bad signature' }
  if (!(await spendNonce(db, call.nonce, 'call', call.issuedAt + 2 * CALL_WINDOW_MS, now))) return { refused: 'replayed nonce' }
  return { ok: true }
}
