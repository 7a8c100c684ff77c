// A request for a replica's log, as the Platform hands it to the node (issue 24
// item 3). The node fetches its pending requests over its own authenticated
// connection (a heartbeat answer says there are some), so no port on the node
// needs to be reachable; each request is signed with the Platform's current
// trust key over the node's name, the replica, how many lines, whether to
// follow, and when it was issued, so the Agent sends output only to whoever
// holds the Platform's trust key — as it runs only assignments signed by it.
import { canonicalJson, verifyDomain } from '../crypto/ed25519.ts'
import { fromB64url } from '../crypto/tokens.ts'
import type { TrustKeyLike } from '../signed/documents.ts'

export const LOG_REQUEST_DOMAIN = 'muster log request v1'
/** The Agent's route (a request signed by a trust key, src/signed/requests.ts) by which a Platform says a log request waits. */
export const LOG_POLL_PATH = '/v1/logs/poll'
/** A signed request is good this long either side of its issue time. */
export const LOG_REQUEST_SKEW_MS = 5 * 60_000

export interface LogRequestPayload {
  id: string
  node: string
  project: string
  replica: number
  tail: number
  /** Keep sending what the replica writes until the Platform no longer wants it. */
  follow: boolean
  issuedAt: string
}

export interface SignedLogRequest {
  payload: LogRequestPayload
  kid: string
  signature: string
}

/** What the node uploads for a request: `seq` 0 is the tail, 1… what followed. */
export interface LogChunk {
  seq: number
  lines: string[]
  truncated: boolean
}

export const logRequestBytes = (p: LogRequestPayload): string => canonicalJson(p)

const ID = /^[A-Za-z0-9_-]{16,64}$/
const PROJECT = /^[a-z0-9][a-z0-9-]{0,62}$/

export type LogRequestCheck = { ok: true; payload: LogRequestPayload } | { ok: false; reason: string; unknownKey?: true }

/** Why the node refuses `doc`, or the request it may serve. */
export function checkLogRequest(doc: unknown, trust: TrustKeyLike[], node: string, now: number): LogRequestCheck {
  const d = doc as Partial<SignedLogRequest> | null
  if (!d || typeof d !== 'object' || !d.payload || typeof d.kid !== 'string' || typeof d.signature !== 'string') return { ok: false, reason: 'unsigned or malformed log request' }
  const key = trust.find((k) => k.kid === d.kid)
  if (!key) return { ok: false, reason: `log request signed by unknown key ${d.kid}`, unknownKey: true }
  if (Date.parse(key.notBefore) > now || Date.parse(key.notAfter) <= now) return { ok: false, reason: `key ${d.kid} is not valid now`, unknownKey: true }
  let bytes: string
  try {
    bytes = logRequestBytes(d.payload)
  } catch {
    return { ok: false, reason: 'malformed log request' }
  }
  if (!verifyDomain(LOG_REQUEST_DOMAIN, fromB64url(key.publicKey), bytes, fromB64url(d.signature))) return { ok: false, reason: 'log request with a bad signature' }
  const p = d.payload
  if (p.node !== node) return { ok: false, reason: `log request for node ${String(p.node)}, not ${node}` }
  if (typeof p.id !== 'string' || !ID.test(p.id) || typeof p.project !== 'string' || !PROJECT.test(p.project)) return { ok: false, reason: 'malformed log request' }
  if (!Number.isInteger(p.replica) || p.replica < 0 || !Number.isInteger(p.tail) || p.tail < 0 || typeof p.follow !== 'boolean') return { ok: false, reason: 'malformed log request' }
  const issued = Date.parse(p.issuedAt)
  if (!Number.isFinite(issued) || Math.abs(now - issued) > LOG_REQUEST_SKEW_MS) return { ok: false, reason: 'log request issued outside ±5 minutes' }
  return { ok: true, payload: p }
}
