// The bodies offices and controllers send each other, validated on arrival.
// Everything here came from the network: shapes are checked before use.
import * as v from 'valibot'
import { IDENTITY, OFFICE_ID } from './formats.ts'
import { PlacedProjectSpec } from './placement.ts'
import { isVersion } from '../version.ts'

const Nonce = v.pipe(v.string(), v.regex(/^[A-Za-z0-9_-]{43}$/, 'expected 32 random bytes, base64url'))
const Url = v.pipe(v.string(), v.maxLength(2048), v.regex(/^https?:\/\/[^\s/?#]+(\/[^\s?#]*)?$/, 'expected an http(s) URL'))

/** Step 1 of joining: the office presents its token and a fresh nonce. */
export const RegisterBody = v.object({
  token: v.pipe(v.string(), v.maxLength(256)),
  officeId: v.pipe(v.string(), v.regex(OFFICE_ID, 'expected an office id')),
  advertiseUrl: Url,
  nonce: Nonce,
  // A version is a version: the controller shows it to its operators (`federation offices`).
  version: v.optional(v.pipe(v.string(), v.maxLength(64), v.check(isVersion, 'expected a version like 1.4.0'))),
  heartbeatSeconds: v.optional(v.pipe(v.number(), v.minValue(0.05), v.maxValue(3600))),
})
export type RegisterBody = v.InferOutput<typeof RegisterBody>

const ProjectStatus = v.object({
  name: v.pipe(v.string(), v.regex(OFFICE_ID)),
  replicas: v.pipe(v.number(), v.integer(), v.minValue(0)),
  state: v.picklist(['pending', 'running', 'failed', 'stopped']),
  running: v.pipe(v.number(), v.integer(), v.minValue(0)),
  detail: v.optional(v.pipe(v.string(), v.maxLength(512), v.regex(/^[^\u0000-\u001f\u007f-\u009f]*$/, 'expected one line of text'))),
})

/** Every later cycle: the same credential and nonce, plus what the office has to report. */
export const HeartbeatBody = v.object({
  ...RegisterBody.entries,
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
export type HeartbeatBody = v.InferOutput<typeof HeartbeatBody>

/** A call the controller makes to an office, signed over every field. */
export const ControllerCall = v.object({
  call: v.picklist(['place']),
  officeId: v.pipe(v.string(), v.regex(OFFICE_ID)),
  nonce: Nonce,
  issuedAt: v.pipe(v.number(), v.integer(), v.minValue(0)),
  payload: PlacedProjectSpec,
  proof: v.pipe(v.string(), v.regex(/^[A-Za-z0-9_-]{86}$/)),
})
export type ControllerCall = v.InferOutput<typeof ControllerCall>
