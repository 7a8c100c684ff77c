// The documents the Platform signs with its trust keys for one node, and the
// node's checks of them (the Agent's and the Platform's local node's alike):
//  - assignments: what a node runs, over the node name, a revision that only
//    grows, and the replicas. The Agent runs nothing it cannot verify.
//  - log requests: a replica's log, over the node, the replica, how many
//    lines, whether to follow and when it was issued, so the Agent sends
//    output only to whoever holds the Platform's trust key. The node fetches
//    them over its own authenticated connection, so no port on it needs to be
//    reachable.
//  - rollout directives (docs/upgrading.md): "install this release now",
//    for one node, valid at most fifteen minutes; the release inside is signed
//    by a release key (src/signed/releases.ts), which the node checks next.
import * as v from 'valibot'
import type { TrustKey } from '../wire/nodes.ts'
import type { AssignmentPayload, LogRequestPayload, SignedAssignments } from '../wire/projects.ts'
import type { DirectivePayload } from '../wire/rollouts.ts'
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

export const DIRECTIVE = purpose<DirectivePayload>(
  'muster rollout directive v1',
  'directive',
  v.looseObject({
    node: v.string(),
    rollout: v.pipe(v.string(), v.regex(/^[a-z2-7]{1,32}$/)),
    release: v.looseObject({ manifest: v.unknown(), kid: v.string(), signature: v.string() }),
    mirrors: v.pipe(v.array(v.pipe(v.string(), v.maxLength(2048), v.regex(/^https?:\/\//))), v.maxLength(8)),
    healthTimeoutMs: v.pipe(v.number(), v.integer(), v.minValue(1000), v.maxValue(3_600_000)),
    issuedAt: v.pipe(v.number(), v.integer()),
    expiresAt: v.pipe(v.number(), v.integer()),
  }),
)
/** A directive lives at most this long (the Platform issues them for less). */
export const MAX_DIRECTIVE_MS = 15 * 60_000
/** Clock skew allowed between a Platform and a node. */
export const DIRECTIVE_SKEW_MS = 5 * 60_000

export type DirectiveCheck = { ok: true; directive: DirectivePayload } | { ok: false; reason: string; unknownKey?: true }

/** A directive signed by a trust key valid now, for `node`, not expired and not issued in the future. */
export function checkDirective(doc: unknown, trust: readonly TrustKey[], node: string, now: number): DirectiveCheck {
  const r = verifyDocument(DIRECTIVE, doc, trust, node, now)
  if (!r.ok) return r
  const x = r.value.payload
  if (x.expiresAt <= x.issuedAt || x.expiresAt - x.issuedAt > MAX_DIRECTIVE_MS) return { ok: false, reason: 'directive has no valid lifetime' }
  if (x.issuedAt > now + DIRECTIVE_SKEW_MS) return { ok: false, reason: 'directive was issued in the future (check this machine’s clock)' }
  if (now >= x.expiresAt) return { ok: false, reason: `directive expired at ${new Date(x.expiresAt).toISOString()}` }
  return { ok: true, directive: x }
}
