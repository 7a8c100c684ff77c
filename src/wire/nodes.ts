// The wire contract of the enrollment authority's routes (/api/v1/nodes…,
// /api/v1/join-tokens): request schemas and answer types. The routes validate
// with these schemas, the services return these types, and the SDK
// (src/client/nodes.ts) imports them: one definition for both sides.
import * as v from 'valibot'
import { LabelsSchema, type Labels } from './labels.ts'
import { NodeName } from './validate.ts'

// ---- requests -------------------------------------------------------------

/** A fleet token's name pattern: `*` any run of name characters, `?` one (src/fabric/glob.ts matches it). */
export const NAME_PATTERN = /^[a-z0-9*?][a-z0-9*?-]{0,62}$/

/** POST /api/v1/nodes/enrollments */
export const CreateEnrollment = v.object({
  nodeId: NodeName,
  ttlMinutes: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(1440, 'at most 1440 minutes (24 hours)'))),
  replace: v.optional(v.boolean()),
})
/** POST /api/v1/join-tokens */
export const CreateJoinToken = v.object({
  maxUses: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(1_000_000))),
  namePattern: v.optional(v.pipe(v.string(), v.regex(NAME_PATTERN, 'expected a glob of name characters, * and ?, like rack1-*'))),
  ttlMinutes: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(43200, 'at most 43200 minutes (30 days)'))),
  label: v.optional(v.pipe(v.string(), v.maxLength(100))),
})
const Capacity = v.object({
  cpuMillis: v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(10_000_000)),
  memoryMB: v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(1_000_000_000)),
})
const ReplicaStatus = v.object({
  project: v.pipe(v.string(), v.maxLength(100)),
  replica: v.pipe(v.number(), v.integer(), v.minValue(0)),
  state: v.picklist(['pending', 'running', 'failed', 'stopped']),
  exitCode: v.optional(v.nullable(v.number())),
  revision: v.optional(v.number()),
  /** Why it failed, when its node knows more than the exit status (killed for its memory limit). */
  reason: v.optional(v.picklist(['out-of-memory'])),
})
/** A replica as its node reports it in a heartbeat. */
export type ReplicaStatus = v.InferOutput<typeof ReplicaStatus>
/** POST /api/v1/nodes/register: the heartbeat. */
export const Register = v.object({
  nodeId: v.optional(NodeName),
  version: v.optional(v.pipe(v.string(), v.regex(/^\d{1,6}\.\d{1,6}\.\d{1,6}([-+][0-9A-Za-z.-]{1,64})?$/, 'expected X.Y.Z'))),
  capacity: v.optional(Capacity),
  replicas: v.optional(v.pipe(v.array(ReplicaStatus), v.maxLength(10_000))),
})
export type HeartbeatBody = v.InferOutput<typeof Register>
/** POST /api/v1/nodes/:name/rebind */
export const Rebind = v.object({ ttlMinutes: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(1440))) })
/** POST /api/v1/nodes/:name/drain */
export const Drain = v.object({ drained: v.optional(v.boolean()) })

/** POST /api/v1/nodes/enroll */
/** The clouds whose signed identity document admits a machine the Platform created (docs/cloud.md). */
export const IDENTITY_PROVIDERS = ['aws', 'gcp', 'azure'] as const
export type IdentityProvider = (typeof IDENTITY_PROVIDERS)[number]

export const EnrollBody = v.object({
  /** A join token, or `identity` (a cloud's signed document; docs/cloud.md): exactly one. */
  token: v.optional(v.pipe(v.string(), v.maxLength(200))),
  identity: v.optional(v.object({ provider: v.picklist(IDENTITY_PROVIDERS), document: v.pipe(v.string(), v.minLength(1), v.maxLength(32768)) })),
  /** The server id the node's metadata service gives (Hetzner, DigitalOcean): a first-boot token is bound to it. */
  machineId: v.optional(v.pipe(v.string(), v.regex(/^[A-Za-z0-9-]{1,64}$/, 'expected a server id'))),
  nodeId: NodeName,
  certPem: v.pipe(v.string(), v.minLength(1), v.maxLength(16384)),
  url: v.optional(v.pipe(v.string(), v.maxLength(300), v.url('expected an https URL'), v.startsWith('https://', 'expected an https URL'))),
  version: v.optional(v.pipe(v.string(), v.maxLength(64))),
  /** Labels the node asks to carry (worker join --label); a nodes file's labels win. */
  labels: v.optional(LabelsSchema),
  // Checked after the token (a wrong or missing proof is the one refusal, never a 400).
  proofTime: v.optional(v.unknown()),
  proof: v.optional(v.unknown()),
})
/**
 * `proofTime` and `proof` come from signEnrollProof (src/crypto/enroll-proof.ts) with the agent key. A join
 * token, or a cloud identity; `machineId` is the server id a bound first-boot token needs.
 */
export type EnrollRequest = { token?: string; identity?: { provider: IdentityProvider; document: string }; machineId?: string; nodeId: string; certPem: string; url?: string; version?: string; labels?: Record<string, string>; proofTime: number; proof: string }
/** POST /api/v1/nodes/identity-challenge: the nonce an Azure machine's attested data must carry (docs/cloud.md). */
export const IdentityChallengeBody = v.object({ nodeId: NodeName })
export interface IdentityChallenge {
  nonce: string
  expiresAt: string
}
/** POST /api/v1/nodes/renew: a rotated-away (previous-generation) credential needs signRenewProof's fields. */
export const RenewBody = v.object({ proofTime: v.optional(v.unknown()), proof: v.optional(v.unknown()) })

// ---- answers --------------------------------------------------------------

export interface TrustKey {
  kid: string
  publicKey: string
  notBefore: string
  notAfter: string
}

export type NodeStateName = 'enrolled' | 'ready' | 'unreachable' | 'revoked'

/** A node as the API shows it (GET /api/v1/nodes). */
export interface NodeView {
  name: string
  state: string
  reason?: string
  compatibility: string
  version: string | null
  certificateSha256: string | null
  agentId: string
  lastSeenAt: string | null
  url: string | null
  auth: 'enrolled' | 'legacy' | 'local'
  drained: boolean
  /** The node's labels: the nodes file's when it declares them, else what the node reported at enroll. */
  labels: Labels
  /** Declared in the nodes file (serve --nodes-file). */
  declared: boolean
  capacity: { cpuMillis: number; memoryMB: number | null } | null
}

export type StateCounts = Record<NodeStateName, number> & { total: number }

/** GET /api/v1/nodes */
export interface NodePage {
  nodes: NodeView[]
  pendingEnrollments: { nodeId: string; expiresAt: string }[]
  /** Pass back as `cursor` for the next page; null on the last page. */
  nextCursor: string | null
  /** Nodes by state over everything `label` and `q` select (the `state` filter and paging aside). */
  counts: StateCounts
}

/** One entry of `platforms` in enroll and heartbeat answers: a live Platform sharing the store, as nodes reach it. */
export interface NodeFacingPlatform {
  id: string
  /** The Platform API: heartbeats, renewals, assignments. */
  url: string
  /** Its enrollment listener (joins, trust refresh), when it has one. */
  enrollmentUrl?: string
}

/** How a node authenticates the Platform from now on (enroll and trust answers). */
export interface NodeAnchors {
  /** The Platform CA's pin. */
  caFingerprint: string
  /** Every pin to accept: the CA's, a prepared replacement's, the old listener certificate's while it is served. */
  pins: string[]
  /** Where the node's Agent sends heartbeats, renewals and assignment requests (the Platform API). */
  platformUrl: string
  /** The operator allowed a plain-http API for nodes (--allow-insecure-node-traffic). */
  insecureNodeTraffic?: true
  /** The release public keys (docs/upgrading.md): a node takes only the first one and those a key it holds endorsed. */
  releaseKeys?: { kid: string; publicKey: string; endorsedBy?: string; signature?: string }[]
}

/** POST /api/v1/nodes/enroll */
export interface EnrollAnswer extends NodeAnchors {
  nodeId: string
  agentId: string
  credential: string
  trustKeys: TrustKey[]
  /** The live Platforms sharing the store, as nodes reach them (the Agent fails over between them). */
  platforms: NodeFacingPlatform[]
}

/** POST /api/v1/nodes/trust */
export interface TrustAnswer extends NodeAnchors {
  trustKeys: TrustKey[]
}

/** POST /api/v1/nodes/register */
export interface HeartbeatAnswer {
  nodeId: string
  state: string
  reason?: string
  generation: number
  drained: boolean
  /** The revision of the node's assignments: the Agent fetches them only when this moves. */
  assignmentRevision?: number
  /** The live Platforms sharing the store, for the Agent's failover (a list kept by the Platform, not built per beat). */
  platforms?: NodeFacingPlatform[]
  /** A request for a replica's log waits: the Agent fetches it (src/agent/log-relay.ts). */
  logs?: true
  /** A rollout waits for this node: the Agent fetches its directive (docs/upgrading.md). */
  update?: true
}

/** `valid`: the credential works. The others are refusals for good: the node must join again. */
export type CredentialState = 'valid' | 'revoked' | 'removed' | 'rebound' | 'superseded'

/** POST /api/v1/nodes/self */
export interface CredentialAnswer {
  nodeId: string
  credential: CredentialState
  /** The node's state as `nodes list` shows it, for a valid credential. */
  state?: NodeStateName
  reason?: string
}

/** POST /api/v1/nodes/renew */
export interface RenewAnswer {
  nodeId: string
  generation: number
  credential: string
}

/** What to run on the new machine (neither holds the token); null where this Platform cannot offer it. */
export interface JoinCommands {
  /** `muster worker join …` (the token from stdin or the prompt). */
  joinCommand: string | null
  /** The curl-and-sh line: authenticates the Platform, installs the worker role, joins, starts the Agent. */
  bootstrapCommand: string | null
}

/** A one-node enrollment token (issueEnrollment; rebind answers the same). */
export interface EnrollmentToken {
  nodeId: string
  token: string
  expiresAt: string
  /** A rebind of a node that joined by its cloud identity: its machine may join so once more (docs/cloud.md). */
  cloudIdentity?: true
}
/** POST /api/v1/nodes/enrollments and POST /api/v1/nodes/:name/rebind */
export type Enrollment = EnrollmentToken & JoinCommands

/** A fleet token as minted (createFleetToken). */
export interface FleetTokenMinted {
  id: string
  token: string
  maxUses: number
  namePattern: string | null
  label: string | null
  expiresAt: string
}
/** POST /api/v1/join-tokens: a fleet token leaves the name open (the commands hold a literal NAME). */
export type FleetToken = FleetTokenMinted & JoinCommands

/** GET /api/v1/join-tokens lists these. */
export interface FleetTokenInfo {
  id: string
  label: string | null
  maxUses: number
  uses: number
  namePattern: string | null
  createdAt: string
  expiresAt: string
  status: 'active' | 'expired' | 'used' | 'revoked'
}

/** Where nodes enroll (the enrollment listener). */
export interface EnrollmentEndpoint {
  url: string
  addresses: string[]
  port: number
  /** The pin to join with: the CA pin (the old listener certificate's fingerprint while it is still served). */
  fingerprint: string
  /** The Platform CA's pin, always. */
  caFingerprint: string
}

/** A live Platform sharing the store, with the loops it runs. */
export interface PlatformView {
  id: string
  url: string
  enrollmentUrl: string | null
  fingerprint: string | null
  version: string
  startedAt: string
  lastSeenAt: string
  self: boolean
  /** The background loops it runs now. */
  runs: string[]
}

/** GET /api/v1/nodes/platform */
export interface PlatformInfo {
  remoteDispatch: boolean
  /** `fingerprint` is the pin to join with; `caFingerprint` the Platform CA's (they differ only while a listener certificate from before the CA is served). */
  enrollment: EnrollmentEndpoint | null
  ca: { fingerprint: string; notAfter: string; next?: { fingerprint: string; notAfter: string } }
  /** Things an operator must act on (a CA with a year or less left). */
  warnings: string[]
  /** The live Platforms sharing the store (one unless several run on PostgreSQL), with the loops each runs. */
  platforms: PlatformView[]
}

/** One entry of the enrollment audit. */
export interface EnrollAuditEntry {
  at: string
  outcome: string
  reason: string | null
  nodeId: string | null
  version: string | null
}
/** GET /api/v1/nodes/audit */
export interface EnrollAuditPage {
  entries: EnrollAuditEntry[]
  nextCursor: string | null
}

/** POST /api/v1/nodes/:name/revoke */
export interface NodeRevoked {
  nodeId: string
  state: string
}
/** POST /api/v1/nodes/:name/rotate */
export interface NodeRotated {
  nodeId: string
  generation: number
  previousValidUntil: string
}
/** POST /api/v1/nodes/:name/drain */
export interface NodeDrained {
  nodeId: string
  drained: boolean
}
/** DELETE /api/v1/nodes/:name: refused for a healthy node (node-healthy) unless `force`. */
export interface NodeRemoved {
  nodeId: string
  removed: boolean
}
/** DELETE /api/v1/join-tokens/:id */
export interface JoinTokenRevoked {
  id: string
  revoked: boolean
}
