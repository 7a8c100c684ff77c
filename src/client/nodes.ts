// SDK: the enrollment authority's routes. Every type is the route's own
// (src/wire/nodes.ts): what the SDK sees is what the Platform sends.
import type { InferInput } from 'valibot'
import type { Transport } from './http.ts'
import { allPages, queryString, type PageOptions } from './paging.ts'
import type {
  CreateEnrollment,
  CreateJoinToken,
  Drain,
  CredentialAnswer,
  EnrollAnswer,
  EnrollAuditPage,
  EnrollRequest,
  IdentityChallenge,
  Enrollment,
  FleetToken,
  FleetTokenInfo,
  HeartbeatAnswer,
  HeartbeatBody,
  JoinTokenRevoked,
  NodeDrained,
  NodePage,
  NodeRemoved,
  NodeRevoked,
  NodeRotated,
  PlatformInfo,
  Rebind,
  RenewAnswer,
  TrustAnswer,
} from '../wire/nodes.ts'

export type {
  CredentialAnswer,
  CredentialState,
  EnrollAuditEntry as AuditEntry,
  EnrollAnswer as EnrollResult,
  Enrollment,
  FleetToken,
  FleetTokenInfo,
  HeartbeatAnswer,
  HeartbeatBody,
  JoinCommands,
  NodeAnchors,
  NodeFacingPlatform,
  NodePage as NodeList,
  NodeView as NodeInfo,
  PlatformInfo,
  TrustAnswer,
  TrustKey,
} from '../wire/nodes.ts'
export interface NodeListOptions extends PageOptions {
  state?: 'enrolled' | 'ready' | 'unreachable' | 'revoked'
  /** KEY=VALUE */
  label?: string
  /** Name prefix. */
  q?: string
}

export function nodesApi(call: Transport) {
  const enc = encodeURIComponent
  return {
    /** One page of nodes (the first 1000 in name order, `local` first, when no options are given). */
    list: (opts: NodeListOptions = {}) => call<NodePage>('GET', `/api/v1/nodes${queryString({ ...opts })}`),
    /** Every node, page after page. */
    listAll: async (opts: Omit<NodeListOptions, 'cursor'> = {}): Promise<NodePage> => {
      const { items, first } = await allPages((cursor) => call<NodePage>('GET', `/api/v1/nodes${queryString({ ...opts, cursor })}`), (p) => p.nodes)
      return { ...first, nodes: items, nextCursor: null }
    },
    createEnrollment: (body: InferInput<typeof CreateEnrollment>) => call<Enrollment>('POST', '/api/v1/nodes/enrollments', body),
    createJoinToken: (body: InferInput<typeof CreateJoinToken>) => call<FleetToken>('POST', '/api/v1/join-tokens', body),
    listJoinTokens: () => call<{ tokens: FleetTokenInfo[] }>('GET', '/api/v1/join-tokens'),
    revokeJoinToken: (id: string) => call<JoinTokenRevoked>('DELETE', `/api/v1/join-tokens/${enc(id)}`),
    /** `proofTime` and `proof` come from signEnrollProof (src/crypto/enroll-proof.ts) with the agent key. */
    enroll: (body: EnrollRequest) => call<EnrollAnswer>('POST', '/api/v1/nodes/enroll', body),
    /** The nonce an Azure machine's attested data must carry for its identity join (docs/cloud.md). */
    identityChallenge: (nodeId: string) => call<IdentityChallenge>('POST', '/api/v1/nodes/identity-challenge', { nodeId }),
    /** Heartbeat; authenticate the client with the node credential. */
    register: (body: HeartbeatBody = {}) => call<HeartbeatAnswer>('POST', '/api/v1/nodes/register', body),
    /** Renew the node credential; a rotated-away (previous-generation) credential needs signRenewProof's fields. */
    renew: (body?: { proofTime: number; proof: string }) => call<RenewAnswer>('POST', '/api/v1/nodes/renew', body),
    trust: () => call<TrustAnswer>('POST', '/api/v1/nodes/trust'),
    /** What the Platform holds about this node's credential (authenticate with it); `certSha256` is the enrolled certificate's. */
    self: (certSha256: string) => call<CredentialAnswer>('POST', '/api/v1/nodes/self', { certSha256 }),
    platform: () => call<PlatformInfo>('GET', '/api/v1/nodes/platform'),
    /** The enrollment audit, newest first, a page at a time. */
    audit: (opts: PageOptions = {}) => call<EnrollAuditPage>('GET', `/api/v1/nodes/audit${queryString({ ...opts })}`),
    /** Refused for a healthy node (node-healthy) unless `force`. */
    remove: (name: string, opts: { force?: boolean } = {}) => call<NodeRemoved>('DELETE', `/api/v1/nodes/${enc(name)}${opts.force ? '?force=true' : ''}`),
    revoke: (name: string) => call<NodeRevoked>('POST', `/api/v1/nodes/${enc(name)}/revoke`),
    rotate: (name: string) => call<NodeRotated>('POST', `/api/v1/nodes/${enc(name)}/rotate`),
    rebind: (name: string, body: InferInput<typeof Rebind> = {}) => call<Enrollment>('POST', `/api/v1/nodes/${enc(name)}/rebind`, body),
    drain: (name: string, body: InferInput<typeof Drain> = {}) => call<NodeDrained>('POST', `/api/v1/nodes/${enc(name)}/drain`, body),
  }
}
