// GCP: the instance identity token (format=full), an RS256 JWT signed by
// Google. Its keys are Google's published certificates by key id, fetched and
// kept until their `Expires` (or max-age), plus those serve
// --cloud-identity-roots adds. Checked: the signature by the key its `kid`
// names, `iss`, `aud` (this Platform's enrollment URL), `exp`, and the
// compute_engine claims the expected machine is matched on.
import { importX509, jwtVerify, decodeProtectedHeader, errors as joseErrors } from 'jose'
import * as v from 'valibot'
import { log } from '../../log.ts'
import { refuse } from './refuse.ts'

export const GOOGLE_CERTS_URL = 'https://www.googleapis.com/oauth2/v1/certs'
const ISSUERS = ['https://accounts.google.com', 'accounts.google.com']

export interface GcpIdentity {
  instanceId: string
  instanceName: string
  projectId: string
  zone: string
  /** instance_creation_timestamp, ms. */
  createdAt: number
}

const Claims = v.object({
  google: v.object({
    compute_engine: v.object({
      instance_id: v.pipe(v.string(), v.regex(/^\d{1,20}$/)),
      instance_name: v.pipe(v.string(), v.maxLength(63)),
      project_id: v.pipe(v.string(), v.maxLength(30)),
      zone: v.pipe(v.string(), v.maxLength(64)),
      instance_creation_timestamp: v.pipe(v.number(), v.integer()),
    }),
  }),
})

/** Google's signing certificates by key id: the published ones (cached by their Expires) and the operator's. */
export class GoogleKeys {
  private fetched = new Map<string, string>()
  private until = 0
  private lastTry = 0

  constructor(
    private readonly extra: ReadonlyMap<string, string>,
    private readonly url: string = GOOGLE_CERTS_URL,
    private readonly now: () => number = Date.now,
  ) {}

  /** The PEM certificate for `kid`, or null. Fetches when the cache expired, or once a minute for a key id not seen yet. */
  async get(kid: string): Promise<string | null> {
    const extra = this.extra.get(kid)
    if (extra) return extra
    const t = this.now()
    if (t >= this.until || (!this.fetched.has(kid) && t - this.lastTry >= 60_000)) await this.refresh(t)
    return this.fetched.get(kid) ?? null
  }

  private async refresh(t: number): Promise<void> {
    this.lastTry = t
    try {
      const r = await fetch(this.url, { signal: AbortSignal.timeout(10_000), redirect: 'error' })
      if (!r.ok) throw new Error(`answered ${r.status}`)
      const body = (await r.json()) as Record<string, unknown>
      const keys = new Map(Object.entries(body).filter((e): e is [string, string] => typeof e[1] === 'string' && e[1].includes('BEGIN CERTIFICATE')))
      this.fetched = keys
      this.until = t + cacheFor(r.headers, t)
    } catch (e) {
      log.warn(`cloud identity: Google's signing certificates could not be fetched from ${this.url} (${(e as Error).message})`)
    }
  }
}

/** How long Google's answer may be kept: its Cache-Control max-age, else its Expires, else an hour; at most a day. */
export function cacheFor(h: Headers, now: number): number {
  const maxAge = /max-age=(\d+)/.exec(h.get('cache-control') ?? '')
  const expires = Date.parse(h.get('expires') ?? '')
  const ms = maxAge ? Number(maxAge[1]) * 1000 : Number.isFinite(expires) ? expires - now : 3600_000
  return Math.min(Math.max(ms, 0), 86_400_000)
}

export async function verifyGcpToken(jwt: string, keys: GoogleKeys, audience: string, nowMs: number): Promise<GcpIdentity> {
  if (jwt.length > 8192 || !/^[\w-]+\.[\w-]+\.[\w-]+$/.test(jwt)) return refuse('the GCP token is not a JWT')
  let kid: string | undefined
  try {
    const h = decodeProtectedHeader(jwt)
    if (h.alg !== 'RS256') return refuse(`the GCP token is signed with ${h.alg}, not RS256`)
    kid = h.kid
  } catch {
    return refuse('the GCP token header does not parse')
  }
  if (!kid) return refuse('the GCP token names no key id')
  const pem = await keys.get(kid)
  if (!pem) return refuse(`unknown GCP key id ${kid}`)
  let payload: unknown
  try {
    const key = await importX509(pem, 'RS256')
    ;({ payload } = await jwtVerify(jwt, key, { algorithms: ['RS256'], issuer: ISSUERS, audience, currentDate: new Date(nowMs), clockTolerance: 30 }))
  } catch (e) {
    if (e instanceof joseErrors.JWTExpired) return refuse('the GCP token expired')
    if (e instanceof joseErrors.JWTClaimValidationFailed) return refuse(`the GCP token's ${e.claim} is wrong (${e.reason})`)
    if (e instanceof joseErrors.JWSSignatureVerificationFailed) return refuse(`the GCP token's signature does not verify with key ${kid}`)
    return refuse(`the GCP token is refused (${(e as Error).message})`)
  }
  const c = v.safeParse(Claims, payload)
  if (!c.success) return refuse('the GCP token has no compute_engine claims (format=full)')
  const ce = c.output.google.compute_engine
  return { instanceId: ce.instance_id, instanceName: ce.instance_name, projectId: ce.project_id, zone: ce.zone, createdAt: ce.instance_creation_timestamp * 1000 }
}
