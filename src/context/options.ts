// How `muster serve` (or a test) configures a Platform.
import type { AuditRetention } from '../store/audit-log.ts'
import type { OidcOptions } from '../auth/oidc/config.ts'


/** A token bucket with a cap on requests in flight (src/fabric/rate-limit.ts applies it). */
export interface RateLimitOptions {
  perSecond: number
  burst: number
  maxInFlight: number
}

export interface PlatformOptions {
  dataDir: string
  host?: string
  port?: number
  tlsCert?: string
  tlsKey?: string
  publicUrl?: string
  /** Allow remote dispatch with a plain-http public URL (a TLS-terminating proxy on a private link). */
  allowInsecureNodeTraffic?: boolean
  /** Milliseconds since the epoch; injectable so tests can move time. */
  clock?: () => number
  /** Hold platform/serve.lock (default true). */
  lock?: boolean
  enrollmentPort?: number
  enrollmentAddresses?: string[]
  /** Where the enrollment listener binds (default all IPv4 interfaces). */
  enrollmentHost?: string
  /** How often nodes with an address get a health probe (default 15 s, or $MUSTER_PROBE_INTERVAL_MS). */
  probeIntervalMs?: number
  remoteDispatch?: boolean
  localNode?: boolean
  /** Who the local node's replicas run as (an account; `root` only by name); none: a uid per project where serve can switch users. */
  localRunAs?: string
  nodeAuth?: 'legacy' | 'both' | 'enrolled'
  fleetTokenFile?: string
  /** More verification roots for cloud identity joins: JSON {"aws":{REGION:PEM},"gcp":{KID:PEM},"azure":[PEM]} (docs/cloud.md). */
  cloudIdentityRoots?: string
  /** Operator-declared nodes: JSON {"nodes":[{"name","labels"?,"drained"?}]} (docs/nodes.md). */
  nodesFile?: string
  /** A node without a heartbeat for this long is unreachable (default 45 s). */
  nodeStaleAfterMs?: number
  enrollLimit?: RateLimitOptions
  /** Heartbeats admitted (default 50,000/s, burst 100,000, 4,096 at once). */
  heartbeatLimit?: RateLimitOptions
  /** How long an unreachable node keeps its replicas before they move (default 60 s). */
  rescheduleGraceMs?: number
  /** How long `projects logs` waits for a node to send a replica's output (default 30 s; tests shorten it). */
  logWaitMs?: number
  /** The store: `postgres://…` (several Platforms may share it), else SQLite muster.db in the data directory. */
  database?: string
  /** How much of the audit is kept, per budget (default 100,000 entries and 365 days; serve --audit-max-entries, --audit-max-days). */
  auditRetention?: AuditRetention
  /** Sign-in with an OpenID provider (serve --oidc-*; docs/accounts-audit.md). */
  oidc?: OidcOptions
  /** An engine swap: the ports are in use by the old engine, which drains once this one steers them here. */
  takeover?: boolean
}

