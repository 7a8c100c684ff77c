// The wire contract of federation: the bodies offices and controllers send
// each other, validated on arrival (everything here came from the network:
// shapes are checked before use), and the controller's and an office's
// routes for operators, shared with the SDK (src/client/federation.ts).
import * as v from 'valibot'
import { IDENTITY, OFFICE_ID } from './federation-formats.ts'
import { ProjectSpec } from './projects.ts'
import { isVersion } from '../version.ts'

const Nonce = v.pipe(v.string(), v.regex(/^[A-Za-z0-9_-]{43}$/, 'expected 32 random bytes, base64url'))
const Url = v.pipe(v.string(), v.maxLength(2048), v.regex(/^https?:\/\/[^\s/?#]+(\/[^\s?#]*)?$/, 'expected an http(s) URL'))

/** Step 1 of joining: the office presents its token and a fresh nonce. */
export const OfficeRegisterBody = v.object({
  token: v.pipe(v.string(), v.maxLength(256)),
  officeId: v.pipe(v.string(), v.regex(OFFICE_ID, 'expected an office id')),
  advertiseUrl: Url,
  nonce: Nonce,
  // A version is a version: the controller shows it to its operators (`federation offices`).
  version: v.optional(v.pipe(v.string(), v.maxLength(64), v.check(isVersion, 'expected a version like 1.4.0'))),
  heartbeatSeconds: v.optional(v.pipe(v.number(), v.minValue(0.05), v.maxValue(3600))),
})
export type OfficeRegisterBody = v.InferOutput<typeof OfficeRegisterBody>

const ProjectStatus = v.object({
  name: v.pipe(v.string(), v.regex(OFFICE_ID)),
  replicas: v.pipe(v.number(), v.integer(), v.minValue(0)),
  state: v.picklist(['pending', 'running', 'failed', 'stopped']),
  running: v.pipe(v.number(), v.integer(), v.minValue(0)),
  detail: v.optional(v.pipe(v.string(), v.maxLength(512), v.regex(/^[^\u0000-\u001f\u007f-\u009f]*$/, 'expected one line of text'))),
})

/** Every later cycle: the same credential and nonce, plus what the office has to report. */
export const OfficeHeartbeatBody = v.object({
  ...OfficeRegisterBody.entries,
  breakGlass: v.optional(
    v.pipe(
      v.array(
        v.object({
          id: v.pipe(v.string(), v.regex(/^[a-z2-7]{16}$/)),
          account: v.nullable(v.pipe(v.string(), v.regex(IDENTITY))),
          at: v.pipe(v.number(), v.integer(), v.minValue(0)),
          tokenFingerprint: v.pipe(v.string(), v.regex(/^[0-9a-f]{64}$/)),
        }),
      ),
      v.maxLength(1000),
    ),
    [],
  ),
  projects: v.optional(v.pipe(v.array(ProjectStatus), v.maxLength(1000)), []),
})
export type OfficeHeartbeatBody = v.InferOutput<typeof OfficeHeartbeatBody>

/** A call the controller makes to an office, signed over every field. */
export const ControllerCall = v.object({
  call: v.picklist(['place']),
  officeId: v.pipe(v.string(), v.regex(OFFICE_ID)),
  nonce: Nonce,
  issuedAt: v.pipe(v.number(), v.integer(), v.minValue(0)),
  payload: ProjectSpec,
  proof: v.pipe(v.string(), v.regex(/^[A-Za-z0-9_-]{86}$/)),
})
export type ControllerCall = v.InferOutput<typeof ControllerCall>

// ---- operators' routes ----------------------------------------------------

export const OfficeId = v.pipe(v.string(), v.regex(OFFICE_ID, 'expected an office id like office-a (lowercase letters, digits, dashes; at most 63)'))
/** POST /api/v1/federation/join-tokens (a superadmin's): mint, or with `rotate` re-mint, an office's token. */
export const MintOfficeToken = v.object({
  officeId: OfficeId,
  label: v.optional(v.pipe(v.string(), v.maxLength(64))),
  note: v.optional(v.pipe(v.string(), v.maxLength(256))),
  rotate: v.optional(v.boolean()),
})
/** POST /api/office/vouch */
export const RedeemVouch = v.object({ vouch: v.pipe(v.string(), v.maxLength(1024)) })
/** The vouch link's query (`GET /office/vouch?v=…`, a page) and its page's form (`POST /office/vouch`). */
export const RedeemVouchForm = v.object({ v: v.pipe(v.string(), v.maxLength(1024)) })

export type OfficeStatus = 'active' | 'revoked'

/** POST /api/v1/federation/join-tokens */
export interface OfficeTokenMinted {
  officeId: string
  token: string
}
/** GET /api/v1/federation/join-tokens lists these. */
export interface OfficeTokenInfo {
  officeId: string
  label: string | null
  status: OfficeStatus
  createdAt: string | null
  lastSeenAt: string | null
}
/** POST /api/v1/federation/join-tokens/:officeId/revoke */
export interface OfficeTokenRevoked {
  officeId: string
  status: 'revoked'
}

/** A project the controller placed on an office, as the office runs it. */
export interface OfficeProjectStatus {
  name: string
  replicas: number
  state: 'pending' | 'running' | 'failed' | 'stopped'
  /** Replicas running now. */
  running: number
  detail?: string
}

/** GET /api/v1/federation/offices lists these. */
export interface OfficeInfo {
  officeId: string
  label: string | null
  advertiseUrl: string | null
  fresh: boolean
  lastSeenAt: string | null
  status: OfficeStatus
  version: string | null
  projects: OfficeProjectStatus[]
}

/** POST /api/v1/federation/offices/:officeId/vouch */
export interface VouchMinted {
  vouch: string
  redeemUrl: string | null
  expiresAt: string
}

/** POST /api/v1/federation/offices/:officeId/projects (the office's answer to the call). */
export interface OfficePlaced {
  officeId: string
  project: OfficeProjectStatus
}

/** GET /api/v1/federation/break-glass lists these. */
export interface OfficeBreakGlassReport {
  officeId: string
  account: string | null
  at: string
  reportedAt: string
}

/** POST /api/office/vouch (the cookie comes back in Set-Cookie). */
export interface VouchRedeemed {
  ok: true
  account: string
  created: boolean
  role: string
}

/** May a local password open this door? */
export interface LocalAuthority {
  joined: boolean
  officeId: string | null
  localLoginAllowed: boolean
  /** The recorded break-glass that holds the door open under the current membership. */
  breakGlass: { id: string; account: string | null; at: string; reportedAt: string | null } | null
  detachedAt: string | null
}
/** GET /api/v1/office/local-authority */
export interface OfficeLocalAuthority extends LocalAuthority {
  controller: { url: string | null; state: string; lastContactAt: string | null } | null
}

/** GET /api/v1/office/identity-writes lists these. */
export interface OfficeIdentityWrite {
  at: string
  owner: string
  action: 'created' | 'linked'
  role: string
  reason: string
}

/** GET /api/v1/office/projects: env values can be secrets, so the listing names the variables only. */
export interface PlacedProjectsPage {
  projects: (Omit<ProjectSpec, 'env'> & { envKeys: string[]; placedAt: string; status: OfficeProjectStatus })[]
}
