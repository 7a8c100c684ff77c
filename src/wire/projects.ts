// The wire contract of the workload routes (/api/v1/projects…, a node's
// assignments and log requests): request schemas and answer types, shared by
// the routes, the services and the SDK (src/client/projects.ts). The signed
// documents among them are signed and checked in src/signed/documents.ts.

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
