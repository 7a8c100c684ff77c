// What the Agent's parts (its workloads and its log relay) may use of the
// Agent: the node's files and clock, its trust keys, a client of the Platform
// it uses now, and the calls that report back. A part gets this link, never
// the Agent, and hands its hooks back in what it returns (the Agent installs
// them), so no part overwrites the Agent's own slots.
import type { Client } from '../client/index.ts'
import type { DataDir } from '../datadir.ts'
import type { HeartbeatAnswer, ReplicaStatus, TrustKey } from '../wire/nodes.ts'
import type { SignedRequest } from './server.ts'

export interface AgentLink {
  readonly dataDir: DataDir
  /** This node's name. */
  readonly node: string
  now(): number
  /** The trust keys the node holds now. */
  trustKeys(): TrustKey[]
  /** Refreshes trust for a signature by an unknown kid (at most once a minute); true when the keys may have changed. */
  refreshForUnknownKid(): Promise<boolean>
  /** The URL of the Platform the node uses now. */
  platformUrl(): string
  /** An SDK client of that Platform, authenticated with the node credential. */
  api(): Client
  /** A call to the Platform at `url` failed with `e`: true when the Agent moved to another Platform. */
  platformFailed(url: string, e: unknown): boolean
  /** Sends an extra heartbeat soon (replica state changed). */
  nudge(): void
}

/** What a part gives the Agent back: the Agent calls these. */
export interface AgentHooks {
  /** Replica status for heartbeats. */
  replicaStatus(): ReplicaStatus[]
  /** Called with every heartbeat answer. */
  afterHeartbeat(answer: HeartbeatAnswer): void
  /** A signed request from the Platform this part serves, else undefined (the Agent's other handlers get it). */
  handleSigned(r: SignedRequest): Response | undefined
}
