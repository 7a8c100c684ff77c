// The wire contract of rollouts (docs/upgrading.md): starting and steering
// one, what operators read of it, the directive a told node fetches (signed
// with the trust keys: src/signed/documents.ts), and the node's reports.
import * as v from 'valibot'
import type { SignedDocument } from './projects.ts'
import type { SignedManifest } from './releases.ts'

const SHA256 = /^[0-9a-f]{64}$/
const VERSION = /^\d{1,6}\.\d{1,6}\.\d{1,6}([-+][0-9A-Za-z.-]{1,64})?$/
const LABEL = /^[a-z][a-z0-9._-]{0,62}=[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/

export const ReleaseState = ['pending', 'downloading', 'installing', 'restarting', 'done', 'failed', 'rolled-back', 'skipped'] as const

export const StartRollout = v.object({
  version: v.pipe(v.string(), v.regex(VERSION, 'expected X.Y.Z')),
  selector: v.optional(v.pipe(v.array(v.pipe(v.string(), v.regex(LABEL, 'expected label=value'))), v.maxLength(16))),
  canaries: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(10_000))),
  /** A count ("3") or a share of the selected nodes ("5%"). */
  maxUnavailable: v.optional(v.pipe(v.string(), v.regex(/^(\d{1,6}|\d{1,3}(\.\d{1,2})?%)$/, 'expected N or P%'))),
  maxFailures: v.optional(v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(1_000_000))),
  soakSeconds: v.optional(v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(7 * 86_400))),
  healthTimeoutSeconds: v.optional(v.pipe(v.number(), v.integer(), v.minValue(5), v.maxValue(3600))),
})
export type StartRollout = v.InferOutput<typeof StartRollout>

export type RolloutStateName = 'running' | 'paused' | 'halted' | 'done' | 'cancelled'
export type RolloutNodeStateName = (typeof ReleaseState)[number]

export interface RolloutNodeView {
  name: string
  state: RolloutNodeStateName
  from: string | null
  to: string | null
  error: string | null
  canary: boolean
  group: string
  updatedAt: string
}

export interface RolloutGroupView {
  group: string
  total: number
  counts: Record<RolloutNodeStateName, number>
}

export interface RolloutView {
  id: string
  version: string
  state: RolloutStateName
  reason: string | null
  selector: string[]
  canaries: number | null
  maxUnavailable: string
  /** maxUnavailable as a number of nodes. */
  maxUnavailableNodes: number
  maxFailures: number
  soakSeconds: number
  healthTimeoutSeconds: number
  createdAt: string
  createdBy: string
  updatedAt: string
  /** Nodes in the rollout (`nodes` may list fewer: `?nodes=watch`). */
  total: number
  counts: Record<RolloutNodeStateName, number>
  groups: RolloutGroupView[]
  nodes: RolloutNodeView[]
}

export interface RolloutList {
  rollouts: Omit<RolloutView, 'nodes' | 'groups'>[]
}

/** GET /api/v1/nodes/self/directive: install this release now (for one node, valid a few minutes). */
export interface DirectivePayload {
  node: string
  rollout: string
  release: SignedManifest
  /** Other places the binary may be fetched from; the manifest decides what is accepted. */
  mirrors: string[]
  /** How long the new Agent has to pass its health gate. */
  healthTimeoutMs: number
  issuedAt: number
  expiresAt: number
}

export type SignedDirective = SignedDocument<DirectivePayload>

/** POST /api/v1/nodes/self/update: a step of the node's update, or how it ended. */
export const UpdateReport = v.object({
  rollout: v.pipe(v.string(), v.regex(/^[a-z2-7]{1,32}$/)),
  sha256: v.pipe(v.string(), v.regex(SHA256)),
  state: v.picklist(['downloading', 'installing', 'restarting', 'done', 'failed', 'rolled-back', 'skipped']),
  version: v.optional(v.pipe(v.string(), v.regex(VERSION))),
  error: v.optional(v.pipe(v.string(), v.maxLength(1000))),
})
export type UpdateReport = v.InferOutput<typeof UpdateReport>

