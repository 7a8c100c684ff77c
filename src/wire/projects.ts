// The wire contract of the workload routes (/api/v1/projects…, a node's
// assignments and log requests): request schemas and answer types, shared by
// the routes, the services and the SDK (src/client/projects.ts). The signed
// documents among them are signed and checked in src/signed/documents.ts.
import * as v from 'valibot'
import { LabelsSchema, type Labels } from './labels.ts'
import { NodeName } from './validate.ts'

// ---- requests -------------------------------------------------------------

/** What a project is, as operators (POST /api/v1/projects) and controllers (a placement on an office) send it. */
export const ProjectSpec = v.object({
  name: NodeName,
  command: v.pipe(v.array(v.pipe(v.string(), v.maxLength(4096))), v.minLength(1, 'needs the program to run'), v.maxLength(256)),
  env: v.optional(v.record(v.pipe(v.string(), v.regex(/^[A-Za-z_][A-Za-z0-9_]{0,127}$/, 'expected an environment variable name')), v.pipe(v.string(), v.maxLength(8192)))),
  replicas: v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(10_000)),
  /** Millicores per replica (default 100). */
  cpu: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(1_000_000))),
  /** MB per replica (default 64). */
  memory: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(10_000_000))),
  /** Run only on nodes that carry every one of these labels. */
  nodeLabels: v.optional(LabelsSchema),
})
export type ProjectSpec = v.InferOutput<typeof ProjectSpec>
/** What the SDK sends to deploy: the spec before its defaults. */
export type DeployBody = v.InferInput<typeof ProjectSpec>

// ---- answers --------------------------------------------------------------

/** Why replicas are not placed. */
export type ShortfallReason = 'insufficient-capacity' | 'no-eligible-node'

export interface PlacementView {
  replica: number
  node: string | null
  state: 'pending' | 'running' | 'failed' | 'stopped'
  exitCode?: number | null
  /** Why it failed, when its node knows (killed for its memory limit). */
  reason?: 'out-of-memory'
}

/** A project as the API shows it (env values masked for who may not manage projects). */
export interface ProjectView {
  name: string
  command: string[]
  env: Record<string, string>
  replicas: number
  cpu: number
  memory: number
  revision: number
  /** Who placed it: local, or controller. */
  origin: string
  nodeLabels: Labels
  /** The operator who deployed it here (none: placed by a controller). */
  deployedBy: string | null
  shortfall: number
  reason: ShortfallReason | null
  placements: PlacementView[]
}

/** GET /api/v1/projects */
export interface ProjectPage {
  projects: ProjectView[]
  nextCursor: string | null
}

/** DELETE /api/v1/projects/:name */
export interface ProjectRemoved {
  name: string
  removed: true
}

/** GET /api/v1/shortfall: replicas not placed, in all and by project. */
export interface Shortfall {
  total: number
  projects: Record<string, number>
}

/** GET /api/v1/projects/:name/logs (the dashboard shows exactly this). */
export interface ProjectLogs {
  project: string
  replica: number
  node: string
  lines: string[]
  truncated: boolean
  /** Following: where the next poll goes on from; null when the follow has ended. */
  cursor?: string | null
}

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

/** A document signed with a trust key (src/signed/signed.ts): the payload, the key's id and the signature. */
export interface SignedDocument<P> {
  payload: P
  kid: string
  signature: string
}

/** GET /api/v1/nodes/self/assignments: what a node runs, signed with the Platform's trust key. */
export type SignedAssignments = SignedDocument<AssignmentPayload>

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

/** GET /api/v1/nodes/self/log-requests answers these, each signed with a trust key. */
export type SignedLogRequest = SignedDocument<LogRequestPayload>

/** What the node uploads for a request (POST /api/v1/nodes/self/logs/:id): `seq` 0 is the tail, 1… what followed. */
export interface LogChunk {
  seq: number
  lines: string[]
  truncated: boolean
}

/** The Agent's route (a request signed by a trust key, src/signed/requests.ts) by which a Platform says a log request waits. */
export const LOG_POLL_PATH = '/v1/logs/poll'
