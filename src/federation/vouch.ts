// The vouch: the controller's word that one identity, holding one role there,
// may open one session at one office, for 120 seconds. Minted with the cluster key over every field and
// the office's current token fingerprint; verified by the office offline, so it
// works with the controller down, and dies with a rotated token.
import type { SigningKey } from '../crypto/ed25519.ts'
import { signDomain, verifyDomain } from '../crypto/ed25519.ts'
import { b64url, randomBytes } from '../crypto/tokens.ts'
import { MusterError } from '../errors.ts'
import { DOMAINS, IDENTITY, VOUCH_FORMAT, VOUCH_TTL_SECONDS, formatVouch, parseVouch, vouchMessage, type Vouch } from '../wire/federation-formats.ts'
import type { Membership } from './membership.ts'
import type { Role } from '../wire/permissions.ts'

/** A controller clock ahead of the office's by more than this is not trusted to set an expiry. */
const MAX_SKEW_SECONDS = 300

/** A vouch for `identity` carrying `role`: the voucher's role on the controller (the office grants no more). */
export function mintVouch(key: SigningKey, officeId: string, identity: string, role: Role, fingerprint: string, nowMs: number): { vouch: string; expiresAt: number } {
  if (!IDENTITY.test(identity)) throw new MusterError('vouch-identity-invalid', 'A vouch names an account; this caller has none (an API token not tied to an account). Log in with `muster login` and vouch as yourself.')
  const fields = { officeId, identity, role, expiresAt: Math.floor(nowMs / 1000) + VOUCH_TTL_SECONDS, nonce: b64url(randomBytes(16)) }
  const proof = signDomain(DOMAINS.vouch, key.privateKey, vouchMessage(fields, fingerprint))
  return { vouch: formatVouch({ ...fields, proof }), expiresAt: fields.expiresAt }
}

/**
 * Steps an office takes before it spends a vouch (spending is the caller's,
 * because it needs the store):
 *   1. shape: mfv2 with seven well-formed fields
 *      (or an older controller's mfv1, without a role) → vouch-malformed
 *   2. this Platform holds a membership to verify with → vouch-not-an-office
 *   3. the vouch names this office                     → vouch-office-mismatch
 *   4. the proof verifies under the controller key and
 *      this office's current token fingerprint         → vouch-invalid
 *   5. it has not expired                              → vouch-expired
 */
export function checkVouch(text: string, membership: Membership | undefined, nowMs: number): Vouch {
  const v = parseVouch(text)
  if (!v) throw new MusterError('vouch-malformed', `Not a vouch; expected ${VOUCH_FORMAT}.`)
  if (!membership) throw new MusterError('vouch-not-an-office', 'This Platform has joined no controller, so it holds nothing to verify a vouch against.')
  const here = membership.token.officeId
  if (v.officeId !== here) throw new MusterError('vouch-office-mismatch', `This vouch is for office '${v.officeId}'; this is office '${here}'.`)
  const signed = verifyDomain(DOMAINS.vouch, membership.token.controllerKey, vouchMessage(v, membership.fingerprint), v.proof)
  const nowSeconds = Math.floor(nowMs / 1000)
  if (!signed || v.expiresAt > nowSeconds + VOUCH_TTL_SECONDS + MAX_SKEW_SECONDS) {
    throw new MusterError('vouch-invalid', "This vouch does not verify under this office's membership: it was altered, forged, or minted under a token this office no longer holds.")
  }
  if (v.expiresAt <= nowSeconds) throw new MusterError('vouch-expired', `This vouch expired at ${new Date(v.expiresAt * 1000).toISOString()}; a vouch lives ${VOUCH_TTL_SECONDS} seconds. Ask the controller for a new one.`)
  return v
}
