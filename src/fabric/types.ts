// The enrollment authority's shapes: its options and limits, a node as the
// API shows it, where nodes enroll, and what it needs of the Platform.
import type { Pki } from '../pki/pki.ts'
import type { RateLimitOptions } from './rate-limit.ts'
import type { Labels } from './labels.ts'

export type NodeAuthMode = 'legacy' | 'both' | 'enrolled'

export interface FabricOptions {
  remoteDispatch: boolean
  nodeAuth: NodeAuthMode
  fleetToken?: string
  staleAfterMs: number
  enrollLimit: RateLimitOptions
  heartbeatLimit: RateLimitOptions
  trustLimit: RateLimitOptions
}

export const DEFAULT_LIMITS = {
  enroll: { perSecond: 500, burst: 1000, maxInFlight: 256 },
  heartbeat: { perSecond: 50_000, burst: 100_000, maxInFlight: 4096 },
  trust: { perSecond: 50, burst: 200, maxInFlight: 64 },
} satisfies Record<string, RateLimitOptions>

/** Something that keeps a node in use (projects placed on it). */
export type NodeInUseCheck = (node: string) => string | null

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

export interface EnrollmentEndpoint {
  url: string
  addresses: string[]
  port: number
  /** The pin to join with: the CA pin (the old listener certificate's fingerprint while it is still served). */
  fingerprint: string
  /** The Platform CA's pin, always. */
  caFingerprint: string
}

export interface NodeAnchors {
  caFingerprint: string
  pins: string[]
  platformUrl: string
  /** The operator allowed a plain-http API for nodes (--allow-insecure-node-traffic). */
  insecureNodeTraffic?: true
  /** The release public keys (docs/upgrading.md): a node takes only the first one and those a key it holds endorsed. */
  releaseKeys?: { kid: string; publicKey: string; endorsedBy?: string; signature?: string }[]
}

/** What the enrollment authority needs of the Platform around it. */
export interface FabricPlatform {
  /** The Platform CA (nodes pin its key). */
  readonly pki: Pki
  /** How a node authenticates the Platform from now on: pins and the API URL. */
  nodeAnchors(): NodeAnchors
}
