// The wire contract of releases (docs/upgrading.md): the signed manifest and
// release keys, the request schemas of the release routes and their answers,
// and what a node's Agent says it runs. Rollouts: src/wire/rollouts.ts.
import * as v from 'valibot'

const NODE_NAME = /^[a-z0-9][a-z0-9-]{0,62}$/
const SHA256 = /^[0-9a-f]{64}$/
const VERSION = /^\d{1,6}\.\d{1,6}\.\d{1,6}([-+][0-9A-Za-z.-]{1,64})?$/

// ---- signed with a release key (checked by src/signed/releases.ts) -----------------------

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

export const isNodeName = (s: string) => NODE_NAME.test(s)
export const isSha256 = (s: string) => SHA256.test(s)
