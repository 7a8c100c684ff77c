// The wire contract of the fleet at a glance: GET /api/v1/overview answers
// "is my fleet healthy" in one small document whatever the fleet's size, and
// GET /api/v1/overview/nodes pages the nodes with what runs on each. Shared
// by src/overview/fleet.ts (which builds them) and the SDK
// (src/client/overview.ts).
import type { PlatformView, StateCounts } from './nodes.ts'

/** Heartbeat ages, in buckets, of the nodes that are not revoked. */
export interface HeartbeatAges {
  within15s: number
  within1m: number
  within5m: number
  older: number
  never: number
}

export interface Resources {
  cpuMillis: number
  memoryMB: number
}

export interface FleetOverview {
  at: string
  /** The Platform that answered. */
  self: { id: string; hostname: string; url: string; version: string }
  platforms: PlatformView[]
  /** Each background loop and the live Platform running it (null: none runs it now). */
  loops: { name: string; platform: string | null }[]
  nodes: {
    counts: StateCounts
    drained: number
    /** What ready nodes report, and what the replicas placed on them request. */
    capacity: Resources
    used: Resources
    heartbeats: HeartbeatAges
  }
  replicas: { desired: number; placed: number; running: number; shortfall: number }
  /** null when the caller may not see projects. */
  projects: { total: number; needingAttention: number; attention: ProjectHealth[] } | null
}

export interface OverviewNode {
  name: string
  state: string
  reason?: string
  drained: boolean
  lastSeenAt: string | null
  /** Milliseconds since its last heartbeat, by the Platform's clock (null: none yet). */
  heartbeatAgeMs: number | null
  /** What the node reports (null: nothing yet). */
  capacity: Resources | null
  /** Requested by the replicas placed there. */
  used: Resources
  replicas: { placed: number; running: number }
}

export interface ProjectHealth {
  name: string
  /** Replicas asked for. */
  desired: number
  /** Replicas with a node. */
  placed: number
  /** Replicas their node reports running (the current revision). */
  running: number
  /** Replicas that fit nowhere although nodes were eligible. */
  shortfall: number
  reason: string | null
}

/** GET /api/v1/overview/nodes */
export interface OverviewNodePage {
  nodes: OverviewNode[]
  nextCursor: string | null
}
