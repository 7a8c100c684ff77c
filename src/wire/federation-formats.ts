// The federation's wire formats (docs/security.md): the office join token, the vouch,
// the token fingerprint both sides compute, and the signature domains. Pure
// functions only, so both sides and the tests share one definition.
import { MusterError } from '../errors.ts'
import { b64url, fromB64url, sha256Hex } from '../crypto/tokens.ts'
import { isRole, type Role } from './permissions.ts'

export const OFFICE_ID = /^[a-z0-9][a-z0-9-]{0,62}$/
/** Identities are account names on both sides; no colon, so a vouch splits unambiguously. */
export const IDENTITY = /^[A-Za-z0-9][A-Za-z0-9._@-]{0,127}$/
const B64_32 = /^[A-Za-z0-9_-]{43}$/
const B64_16 = /^[A-Za-z0-9_-]{22}$/
const B64_SIG = /^[A-Za-z0-9_-]{86}$/

/** One domain per purpose, so a signature made for one never verifies as another. */
export const DOMAINS = {
  register: 'muster federation register v1',
  heartbeat: 'muster federation heartbeat v1',
  call: 'muster federation controller-call v1',
  vouch: 'muster federation vouch v1',
} as const

export const TOKEN_FORMAT = 'mof1:<office_id>:<controller_verify_key>:<secret>'
export const VOUCH_FORMAT = 'mfv2:<office_id>:<identity>:<role>:<expires_at>:<nonce>:<proof>'
export const VOUCH_TTL_SECONDS = 120

export interface OfficeToken {
  officeId: string
  /** The controller's Ed25519 public key (raw 32 bytes). */
  controllerKey: Uint8Array
  secret: string
}

export function formatOfficeToken(officeId: string, controllerKey: Uint8Array, secret: string): string {
  return `mof1:${officeId}:${b64url(controllerKey)}:${secret}`
}

/** Parses an office join token; anything else is refused naming the expected format. */
export function parseOfficeToken(text: string, what = 'office join token'): OfficeToken {
  const parts = text.trim().split(':')
  const [scheme, officeId, key, secret] = parts
  if (parts.length !== 4 || scheme !== 'mof1' || !OFFICE_ID.test(officeId!) || !B64_32.test(key!) || !B64_32.test(secret!)) {
    throw new MusterError('invalid-request', `The ${what} is not a muster office join token; expected ${TOKEN_FORMAT}, as printed by \`muster federation mint\` on the controller.`)
  }
  return { officeId: officeId!, controllerKey: fromB64url(key!), secret: secret! }
}

/**
 * The fingerprint of one membership. Derived from the secret's SHA-256 (what
 * the controller stores) but never equal to it, so it can be signed over,
 * recorded and reported without the stored digest ever leaving storage.
 */
export function tokenFingerprint(officeId: string, secretHash: string): string {
  return sha256Hex(`mof1-fingerprint:${officeId}:${secretHash}`)
}

export function fingerprintOfToken(token: OfficeToken): string {
  return tokenFingerprint(token.officeId, sha256Hex(token.secret))
}

export interface Vouch {
  officeId: string
  identity: string
  /**
   * The voucher's role on the controller, signed (mfv2). Undefined for an mfv1
   * vouch from an older controller: the office then grants the least role.
   */
  role?: Role
  /** Unix seconds. */
  expiresAt: number
  nonce: string
  proof: Uint8Array
}

export function formatVouch(v: Vouch & { role: Role }): string {
  return `mfv2:${v.officeId}:${v.identity}:${v.role}:${v.expiresAt}:${v.nonce}:${b64url(v.proof)}`
}

/** What the controller signs for a vouch: every field (the role too), and the office's current token fingerprint. */
export function vouchMessage(v: Omit<Vouch, 'proof'>, fingerprint: string): string {
  if (v.role === undefined) return JSON.stringify(['mfv1', v.officeId, v.identity, v.expiresAt, v.nonce, fingerprint])
  return JSON.stringify(['mfv2', v.officeId, v.identity, v.role, v.expiresAt, v.nonce, fingerprint])
}

/** Shape only (mfv2, or an older controller's mfv1 without a role); undefined when the text is not a vouch. */
export function parseVouch(text: string): Vouch | undefined {
  const parts = text.trim().split(':')
  const v2 = parts[0] === 'mfv2' && parts.length === 7
  if (!v2 && !(parts[0] === 'mfv1' && parts.length === 6)) return undefined
  const [, officeId, identity, ...rest] = parts as string[]
  const role = v2 ? rest.shift()! : undefined
  const [expires, nonce, proof] = rest as [string, string, string]
  if (!OFFICE_ID.test(officeId!) || !IDENTITY.test(identity!) || !/^\d{1,12}$/.test(expires) || !B64_16.test(nonce) || !B64_SIG.test(proof)) return undefined
  if (role !== undefined && !isRole(role)) return undefined
  return { officeId: officeId!, identity: identity!, ...(role !== undefined ? { role: role as Role } : {}), expiresAt: Number(expires), nonce, proof: fromB64url(proof) }
}
