// The enrollment authority's shapes: its options and limits, a node as the
// API shows it, where nodes enroll, and what it needs of the Platform.
import type { Pki } from '../pki/pki.ts'
import type { RateLimitOptions } from '../context/options.ts'
import type { NodeAnchors } from '../wire/nodes.ts'

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

/** What the enrollment authority needs of the Platform around it. */
export interface FabricPlatform {
  /** The Platform CA (nodes pin its key). */
  readonly pki: Pki
  /** How a node authenticates the Platform from now on: pins and the API URL. */
  nodeAnchors(): NodeAnchors
}
