// SDK: the enrollment authority's routes.
import type { Transport } from './http.ts'
import type { NodeView } from '../fabric/fabric.ts'

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
}
export interface Enrollment {
  nodeId: string
  token: string
  expiresAt: string
}
export interface FleetToken {
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
/** How a node authenticates the Platform from now on (enroll and trust answers). */
export interface NodeAnchors {
  /** The Platform CA's pin. */
  caFingerprint: string
  /** Every pin to accept: the CA's, a prepared replacement's, the old listener certificate's while it is served. */
  pins: string[]
  platformUrl: string
  insecureNodeTraffic?: true
}
export interface EnrollResult extends NodeAnchors {
  nodeId: string
  agentId: string
  credential: string
  trustKeys: TrustKey[]
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
    list: () => call<NodeList>('GET', '/api/v1/nodes'),
    createEnrollment: (body: { nodeId: string; ttlMinutes?: number; replace?: boolean }) => call<Enrollment>('POST', '/api/v1/nodes/enrollments', body),
    createJoinToken: (body: { maxUses?: number; namePattern?: string; ttlMinutes?: number; label?: string }) => call<FleetToken>('POST', '/api/v1/join-tokens', body),
    listJoinTokens: () => call<{ tokens: FleetTokenInfo[] }>('GET', '/api/v1/join-tokens'),
    revokeJoinToken: (id: string) => call<{ id: string; revoked: boolean }>('DELETE', `/api/v1/join-tokens/${enc(id)}`),
    enroll: (body: { token: string; nodeId: string; certPem: string; url?: string; version?: string; labels?: Record<string, string> }) => call<EnrollResult>('POST', '/api/v1/nodes/enroll', body),
    /** Heartbeat; authenticate the client with the node credential. */
    register: (body: HeartbeatBody = {}) => call<{ nodeId: string; state: string; reason?: string; generation: number; drained: boolean }>('POST', '/api/v1/nodes/register', body),
    renew: () => call<{ nodeId: string; generation: number; credential: string }>('POST', '/api/v1/nodes/renew'),
    trust: () => call<TrustAnswer>('POST', '/api/v1/nodes/trust'),
    platform: () => call<PlatformInfo>('GET', '/api/v1/nodes/platform'),
    audit: () => call<{ entries: AuditEntry[] }>('GET', '/api/v1/nodes/audit'),
    /** Refused for a healthy node (node-healthy) unless `force`. */
    remove: (name: string, opts: { force?: boolean } = {}) => call<{ nodeId: string; removed: boolean }>('DELETE', `/api/v1/nodes/${enc(name)}${opts.force ? '?force=true' : ''}`),
    revoke: (name: string) => call<{ nodeId: string; state: string }>('POST', `/api/v1/nodes/${enc(name)}/revoke`),
    rotate: (name: string) => call<{ nodeId: string; generation: number; previousValidUntil: string }>('POST', `/api/v1/nodes/${enc(name)}/rotate`),
    rebind: (name: string, body: { ttlMinutes?: number } = {}) => call<Enrollment>('POST', `/api/v1/nodes/${enc(name)}/rebind`, body),
    drain: (name: string, body: { drained?: boolean } = {}) => call<{ nodeId: string; drained: boolean }>('POST', `/api/v1/nodes/${enc(name)}/drain`, body),
  }
}
