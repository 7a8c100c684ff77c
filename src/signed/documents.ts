// Signed assignments: the document a node pulls to learn what to run, signed
// with the Platform's current trust key over the node name, a revision that
// only grows, and the replicas. The Agent runs nothing it cannot verify.
import { canonicalJson, verifyDomain } from '../crypto/ed25519.ts'
import { fromB64url } from '../crypto/tokens.ts'

export const ASSIGNMENTS_DOMAIN = 'muster assignments v1'

export interface AssignedReplica {
  project: string
  replica: number
  /** The project's revision: a redeploy makes a new one. */
  revision: number
  command: string[]
  env: Record<string, string>
  cpu: number
  memory: number
}

export interface AssignmentPayload {
  node: string
  revision: number
  issuedAt: string
  replicas: AssignedReplica[]
}

export interface SignedAssignments {
  payload: AssignmentPayload
  kid: string
  signature: string
}

export interface TrustKeyLike {
  kid: string
  publicKey: string
  notBefore: string
  notAfter: string
}

export function assignmentBytes(payload: AssignmentPayload): string {
  return canonicalJson(payload)
}

/** `unknownKey`: signed by a kid not among the keys valid now (a trust refresh may help). */
export type AssignmentsCheck = { ok: true; doc: SignedAssignments } | { ok: false; reason: string; unknownKey?: true }

/** Why a document is refused, or ok when it verifies and is not older than `current`. */
export function checkAssignments(doc: unknown, trust: TrustKeyLike[], node: string, current: number, now = Date.now()): AssignmentsCheck {
  const d = doc as Partial<SignedAssignments> | null
  if (!d || typeof d !== 'object' || !d.payload || typeof d.kid !== 'string' || typeof d.signature !== 'string') return { ok: false, reason: 'unsigned or malformed document' }
  const key = trust.find((k) => k.kid === d.kid)
  if (!key) return { ok: false, reason: `signed by unknown key ${d.kid}`, unknownKey: true }
  if (Date.parse(key.notBefore) > now || Date.parse(key.notAfter) <= now) return { ok: false, reason: `key ${d.kid} is not valid now`, unknownKey: true }
  let bytes: string
  try {
    bytes = assignmentBytes(d.payload)
  } catch {
    return { ok: false, reason: 'malformed payload' }
  }
  if (!verifyDomain(ASSIGNMENTS_DOMAIN, fromB64url(key.publicKey), bytes, fromB64url(d.signature))) return { ok: false, reason: 'bad signature' }
  const p = d.payload
  if (p.node !== node) return { ok: false, reason: `document is for node ${String(p.node)}, not ${node}` }
  if (!Number.isInteger(p.revision) || p.revision < current) return { ok: false, reason: `revision ${p.revision} is older than the running ${current}` }
  if (!Array.isArray(p.replicas)) return { ok: false, reason: 'malformed replicas' }
  return { ok: true, doc: d as SignedAssignments }
}
