// The wire contract of releases and rollouts (docs/upgrading.md): request
// schemas the routes validate with, and the answers the services return and
// the SDK reads.
import * as v from 'valibot'

const NODE_NAME = /^[a-z0-9][a-z0-9-]{0,62}$/
const SHA256 = /^[0-9a-f]{64}$/
const VERSION = /^\d{1,6}\.\d{1,6}\.\d{1,6}([-+][0-9A-Za-z.-]{1,64})?$/
const LABEL = /^[a-z][a-z0-9._-]{0,62}=[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/

// ---- signed documents (checked by src/signed/release-documents.ts) ---------------------

export const ARCHES = ['x64', 'arm64'] as const
export type Arch = (typeof ARCHES)[number]

export interface Manifest {
  version: string
  arch: Arch
  sha256: string
  size: number
  sequence: number
}

export interface SignedManifest {
  manifest: Manifest
  kid: string
  signature: string
}

export interface ReleaseKey {
  kid: string
  publicKey: string
  /** The kid of the key that signed this one; absent for the first key. */
  endorsedBy?: string
  signature?: string
}

export interface Directive {
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

export interface SignedDirective {
  directive: Directive
  kid: string
  signature: string
}

export const ReleaseState = ['pending', 'downloading', 'installing', 'restarting', 'done', 'failed', 'rolled-back', 'skipped'] as const

// ---- operators ------------------------------------------------------------------

/** POST /api/v1/releases/uploads: the upload the binary's parts go to. */
export const StartUpload = v.object({ size: v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(512 * 1024 * 1024)) })

/** POST /api/v1/releases: a signed manifest, the upload that holds its (compressed) binary, the key that signed it. */
export const AddRelease = v.object({
  release: v.object({ manifest: v.unknown(), kid: v.string(), signature: v.string() }),
  upload: v.pipe(v.string(), v.regex(/^[a-z2-7]{16}$/)),
  /** The signing key's public half; with `endorsement`, a key endorsed by one the Platform holds. */
  key: v.object({ kid: v.string(), publicKey: v.string(), endorsedBy: v.optional(v.string()), signature: v.optional(v.string()) }),
  mirrors: v.optional(v.pipe(v.array(v.pipe(v.string(), v.maxLength(2048), v.regex(/^https?:\/\/[^\s]+$/, 'expected an http(s) URL'))), v.maxLength(8))),
})
export type AddRelease = v.InferOutput<typeof AddRelease>

/** POST /api/v1/releases/keys: a release key endorsed by one the Platform already holds. */
export const AddReleaseKey = v.object({ kid: v.string(), publicKey: v.string(), endorsedBy: v.string(), signature: v.string() })

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

export interface ReleaseView {
  version: string
  sequence: number
  arch: string
  sha256: string
  size: number
  compressedSize: number
  kid: string
  mirrors: string[]
  addedAt: string
  addedBy: string
}

export interface ReleaseKeyView {
  kid: string
  publicKey: string
  endorsedBy: string | null
  addedAt: string
}

export interface ReleaseList {
  releases: ReleaseView[]
  keys: ReleaseKeyView[]
}

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
  counts: Record<RolloutNodeStateName, number>
  groups: RolloutGroupView[]
  nodes: RolloutNodeView[]
}

export interface RolloutList {
  rollouts: Omit<RolloutView, 'nodes' | 'groups'>[]
}

// ---- nodes ----------------------------------------------------------------------

/** POST /api/v1/nodes/self/agent: what this node's Agent runs, at its start and after each update. */
export const AgentFacts = v.object({
  arch: v.picklist(['x64', 'arm64']),
  version: v.pipe(v.string(), v.regex(VERSION)),
  binarySha256: v.pipe(v.string(), v.regex(SHA256)),
  sequence: v.pipe(v.number(), v.integer(), v.minValue(0)),
  skipped: v.pipe(v.array(v.pipe(v.string(), v.regex(SHA256))), v.maxLength(64)),
})
export type AgentFacts = v.InferOutput<typeof AgentFacts>

/** POST /api/v1/nodes/self/update: a step of the node's update, or how it ended. */
export const UpdateReport = v.object({
  rollout: v.pipe(v.string(), v.regex(/^[a-z2-7]{1,32}$/)),
  sha256: v.pipe(v.string(), v.regex(SHA256)),
  state: v.picklist(['downloading', 'installing', 'restarting', 'done', 'failed', 'rolled-back', 'skipped']),
  version: v.optional(v.pipe(v.string(), v.regex(VERSION))),
  error: v.optional(v.pipe(v.string(), v.maxLength(1000))),
})
export type UpdateReport = v.InferOutput<typeof UpdateReport>

export const isNodeName = (s: string) => NODE_NAME.test(s)
export const isSha256 = (s: string) => SHA256.test(s)
