// SDK: the enrollment authority's routes.
import type { Transport } from './http.ts'
import { allPages, queryString, type PageOptions } from './paging.ts'
import type { NodeView } from '../fabric/fabric.ts'
import type { CredentialAnswer } from '../fabric/node-state.ts'
export type { CredentialAnswer, CredentialState } from '../fabric/node-state.ts'

export interface TrustKey {
  kid: string
  publicKey: string
  notBefore: string
  notAfter: string
}
export type { NodeView as NodeInfo } from '../fabric/fabric.ts'
export interface NodeList {
  nodes: NodeView[]
  pendingEnrollments: { nodeId: string; expiresAt: string }[]
  /** Pass as `cursor` for the next page; null on the last one. */
  nextCursor: string | null
  /** Nodes by state over everything `label` and `q` select (the `state` filter and paging aside). */
  counts: { total: number; enrolled: number; ready: number; unreachable: number; revoked: number }
}
export interface NodeListOptions extends PageOptions {
  state?: 'enrolled' | 'ready' | 'unreachable' | 'revoked'
  /** KEY=VALUE */
  label?: string
  /** Name prefix. */
  q?: string
}
export interface HeartbeatAnswer {
  nodeId: string
  state: string
  reason?: string
  generation: number
  drained: boolean
  /** The node's assignment revision: fetch the assignments when it moves. */
  assignmentRevision?: number
  /** The Platforms sharing the store, for the Agent's failover. */
  platforms?: NodeFacingPlatform[]
  /** A rollout waits for this node: fetch the directive. */
  update?: true
}
/** What to run on the new machine (neither holds the token); null where this Platform cannot offer it. */
export interface JoinCommands {
  /** `muster worker join …` (the token from stdin or the prompt). */
  joinCommand: string | null
  /** The curl-and-sh line: authenticates the Platform, installs the worker role, joins, starts the Agent. */
  bootstrapCommand: string | null
}
export interface Enrollment extends JoinCommands {
  nodeId: string
  token: string
  expiresAt: string
}
/** A fleet token leaves the name open: the commands hold a literal NAME. */
export interface FleetToken extends JoinCommands {
  id: string
  token: string
  maxUses: number
  namePattern: string | null
  label: string | null
  expiresAt: string
}
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
/** A live Platform sharing the store, as nodes reach it (SPEC §16.9). */
export interface NodeFacingPlatform {
  id: string
  url: string
  enrollmentUrl?: string
}
/** How a node authenticates the Platform from now on (enroll and trust answers). */
export interface NodeAnchors {
  /** The Platform CA's pin. */
  caFingerprint: string
  /** Every pin to accept: the CA's, a prepared replacement's, the old listener certificate's while it is served. */
  pins: string[]
  platformUrl: string
  insecureNodeTraffic?: true
  /** The release public keys (docs/upgrading.md). */
  releaseKeys?: { kid: string; publicKey: string; endorsedBy?: string; signature?: string }[]
}
export interface EnrollResult extends NodeAnchors {
  nodeId: string
  agentId: string
  credential: string
  trustKeys: TrustKey[]
  platforms?: NodeFacingPlatform[]
}
export interface TrustAnswer extends NodeAnchors {
  trustKeys: TrustKey[]
}
export interface PlatformInfo {
  remoteDispatch: boolean
  /** `fingerprint` is the pin to join with; `caFingerprint` the Platform CA's (they differ only while a listener certificate from before the CA is served). */
  enrollment: { url: string; addresses: string[]; port: number; fingerprint: string; caFingerprint: string } | null
  ca: { fingerprint: string; notAfter: string; next?: { fingerprint: string; notAfter: string } }
  /** Things an operator must act on (a CA with a year or less left). */
  warnings: string[]
  /** The live Platforms sharing the store (one unless several run on PostgreSQL), with the loops each runs. */
  platforms?: { id: string; url: string; enrollmentUrl: string | null; fingerprint: string | null; version: string; startedAt: string; lastSeenAt: string; self: boolean; runs: string[] }[]
}
export interface AuditEntry {
  at: string
  outcome: string
  reason: string | null
  nodeId: string | null
  version: string | null
}
export interface HeartbeatBody {
  nodeId?: string
  version?: string
  capacity?: { cpuMillis: number; memoryMB: number }
  replicas?: { project: string; replica: number; state: string; exitCode?: number | null; revision?: number }[]
}

export function nodesApi(call: Transport) {
  const enc = encodeURIComponent
  return {
    /** One page of nodes (the first 1000 in name order, `local` first, when no options are given). */
    list: (opts: NodeListOptions = {}) => call<NodeList>('GET', `/api/v1/nodes${queryString({ ...opts })}`),
    /** Every node, page after page. */
    listAll: async (opts: Omit<NodeListOptions, 'cursor'> = {}): Promise<NodeList> => {
      const { items, first } = await allPages((cursor) => call<NodeList>('GET', `/api/v1/nodes${queryString({ ...opts, cursor })}`), (p) => p.nodes)
      return { ...first, nodes: items, nextCursor: null }
    },
    createEnrollment: (body: { nodeId: string; ttlMinutes?: number; replace?: boolean }) => call<Enrollment>('POST', '/api/v1/nodes/enrollments', body),
    createJoinToken: (body: { maxUses?: number; namePattern?: string; ttlMinutes?: number; label?: string }) => call<FleetToken>('POST', '/api/v1/join-tokens', body),
    listJoinTokens: () => call<{ tokens: FleetTokenInfo[] }>('GET', '/api/v1/join-tokens'),
    revokeJoinToken: (id: string) => call<{ id: string; revoked: boolean }>('DELETE', `/api/v1/join-tokens/${enc(id)}`),
    /** `proofTime` and `proof` come from signEnrollProof (src/crypto/enroll-proof.ts) with the agent key. */
    enroll: (body: { token: string; nodeId: string; certPem: string; url?: string; version?: string; labels?: Record<string, string>; proofTime: number; proof: string }) => call<EnrollResult>('POST', '/api/v1/nodes/enroll', body),
    /** Heartbeat; authenticate the client with the node credential. */
    register: (body: HeartbeatBody = {}) => call<HeartbeatAnswer>('POST', '/api/v1/nodes/register', body),
    /** Renew the node credential; a rotated-away (previous-generation) credential needs signRenewProof's fields. */
    renew: (body?: { proofTime: number; proof: string }) => call<{ nodeId: string; generation: number; credential: string }>('POST', '/api/v1/nodes/renew', body),
    trust: () => call<TrustAnswer>('POST', '/api/v1/nodes/trust'),
    /** What the Platform holds about this node's credential (authenticate with it); `certSha256` is the enrolled certificate's. */
    self: (certSha256: string) => call<CredentialAnswer>('POST', '/api/v1/nodes/self', { certSha256 }),
    platform: () => call<PlatformInfo>('GET', '/api/v1/nodes/platform'),
    /** The enrollment audit, newest first, a page at a time. */
    audit: (opts: PageOptions = {}) => call<{ entries: AuditEntry[]; nextCursor: string | null }>('GET', `/api/v1/nodes/audit${queryString({ ...opts })}`),
    /** Refused for a healthy node (node-healthy) unless `force`. */
    remove: (name: string, opts: { force?: boolean } = {}) => call<{ nodeId: string; removed: boolean }>('DELETE', `/api/v1/nodes/${enc(name)}${opts.force ? '?force=true' : ''}`),
    revoke: (name: string) => call<{ nodeId: string; state: string }>('POST', `/api/v1/nodes/${enc(name)}/revoke`),
    rotate: (name: string) => call<{ nodeId: string; generation: number; previousValidUntil: string }>('POST', `/api/v1/nodes/${enc(name)}/rotate`),
    rebind: (name: string, body: { ttlMinutes?: number } = {}) => call<Enrollment>('POST', `/api/v1/nodes/${enc(name)}/rebind`, body),
    drain: (name: string, body: { drained?: boolean } = {}) => call<{ nodeId: string; drained: boolean }>('POST', `/api/v1/nodes/${enc(name)}/drain`, body),
  }
}
