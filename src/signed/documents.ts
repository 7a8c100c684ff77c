// The documents the Platform signs with its trust keys for one node, and the
// node's checks of them (the Agent's and the Platform's local node's alike):
//  - assignments: what a node runs, over the node name, a revision that only
//    grows, and the replicas. The Agent runs nothing it cannot verify.
//  - log requests: a replica's log, over the node, the replica, how many
//    lines, whether to follow and when it was issued, so the Agent sends
//    output only to whoever holds the Platform's trust key. The node fetches
//    them over its own authenticated connection, so no port on it needs to be
//    reachable.
import * as v from 'valibot'
import type { TrustKey } from '../wire/nodes.ts'
import type { AssignmentPayload, LogRequestPayload, SignedAssignments } from '../wire/projects.ts'
import { purpose, verifyDocument } from './signed.ts'

// The node checks what it relies on before the revision check (the replicas a list); the
// replicas themselves are the runner's to read, as every earlier Platform wrote them.
export const ASSIGNMENTS = purpose<AssignmentPayload>('muster assignments v1', 'document', v.looseObject({ node: v.string(), replicas: v.array(v.unknown()) }))

export const LOG_REQUEST = purpose<LogRequestPayload>(
  'muster log request v1',
  'log request',
  v.looseObject({
    id: v.pipe(v.string(), v.regex(/^[A-Za-z0-9_-]{16,64}$/)),
    project: v.pipe(v.string(), v.regex(/^[a-z0-9][a-z0-9-]{0,62}$/)),
    replica: v.pipe(v.number(), v.integer(), v.minValue(0)),
    tail: v.pipe(v.number(), v.integer(), v.minValue(0)),
    follow: v.boolean(),
  }),
)
/** A signed log request is good this long either side of its issue time. */
export const LOG_REQUEST_SKEW_MS = 5 * 60_000

/** `unknownKey`: signed by a kid not among the keys valid now (a trust refresh may help). */
export type AssignmentsCheck = { ok: true; doc: SignedAssignments } | { ok: false; reason: string; unknownKey?: true }

/** Why a document is refused, or ok when it verifies and is not older than `current`. */
export function checkAssignments(doc: unknown, trust: readonly TrustKey[], node: string, current: number, now = Date.now()): AssignmentsCheck {
  const r = verifyDocument(ASSIGNMENTS, doc, trust, node, now)
  if (!r.ok) return r
  const p = r.value.payload
  if (!Number.isInteger(p.revision) || p.revision < current) return { ok: false, reason: `revision ${p.revision} is older than the running ${current}` }
  return { ok: true, doc: r.value }
}

export type LogRequestCheck = { ok: true; payload: LogRequestPayload } | { ok: false; reason: string; unknownKey?: true }

/** Why the node refuses `doc`, or the request it may serve. */
export function checkLogRequest(doc: unknown, trust: readonly TrustKey[], node: string, now: number): LogRequestCheck {
  const r = verifyDocument(LOG_REQUEST, doc, trust, node, now)
  if (!r.ok) return r
  const p = r.value.payload
  const issued = Date.parse(p.issuedAt)
  if (!Number.isFinite(issued) || Math.abs(now - issued) > LOG_REQUEST_SKEW_MS) return { ok: false, reason: 'log request issued outside ±5 minutes' }
  return { ok: true, payload: p }
}
