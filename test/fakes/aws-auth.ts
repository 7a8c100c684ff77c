// The AWS fake's identity side: SigV4 checked the way AWS checks it (unknown
// key → AuthFailure, wrong signature → SignatureDoesNotMatch, stale date →
// RequestExpired, temporary keys need their x-amz-security-token), STS
// (AssumeRole with its ExternalId condition, AssumeRoleWithWebIdentity), the
// EC2 instance metadata service v2 (a PUT token first, then the role's keys;
// from a container behind a hop limit of 1 the token answer never arrives),
// and the container credentials endpoints: ECS (GET 169.254.170.2 + the
// relative URI) and EKS Pod Identity (GET the full URI with the pod's token in
// Authorization; https://docs.aws.amazon.com/eks/latest/userguide/pod-id-how-it-works.html).
import { createHash, createHmac } from 'node:crypto'

const hex = (s: string) => createHash('sha256').update(s).digest('hex')
const mac = (k: string | Buffer, s: string) => createHmac('sha256', k).update(s).digest()
const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;')

export const ec2Error = (status: number, code: string, message: string) =>
  new Response(`<?xml version="1.0" encoding="UTF-8"?>\n<Response><Errors><Error><Code>${code}</Code><Message>${esc(message)}</Message></Error></Errors><RequestID>${crypto.randomUUID()}</RequestID></Response>`, { status, headers: { 'content-type': 'text/xml;charset=UTF-8' } })
const STS_NS = 'https://sts.amazonaws.com/doc/2011-06-15/'
export const stsError = (status: number, code: string, message: string) =>
  new Response(`<ErrorResponse xmlns="${STS_NS}"><Error><Type>Sender</Type><Code>${code}</Code><Message>${esc(message)}</Message></Error><RequestId>${crypto.randomUUID()}</RequestId></ErrorResponse>`, { status, headers: { 'content-type': 'text/xml' } })

export interface Key {
  secret: string
  /** Temporary keys: the session token that must come with them, and when they stop working. */
  sessionToken?: string
  expiresAt?: number
  /** Who the keys are: a user, an assumed role, an instance profile. */
  who: string
}

export class AwsIdentity {
  readonly keys = new Map<string, Key>()
  /** AssumeRole is allowed to this role; with an external id when one is set. */
  roleArn = 'arn:aws:iam::123456789012:role/muster-provisioner'
  externalId: string | null = 'muster-ext-7f3a'
  /** AssumeRoleWithWebIdentity accepts this token for webRoleArn. */
  webIdentityToken = 'eyJhbGciOiJSUzI1NiJ9.web-identity.sig'
  webRoleArn = 'arn:aws:iam::123456789012:role/muster-platform'
  /** The instance profile role the metadata service serves (null: the instance has none). */
  instanceRole: string | null = 'muster-platform-instance'
  readonly stsCalls: string[] = []
  /** The token PUT is never answered (a container behind a hop limit of 1). */
  imdsHopLimit = false
  /** ECS: the relative URI the task's role is served at. */
  containerRelativeUri = '/v2/credentials/3f1c7a52-ecs-task-role'
  /** EKS Pod Identity: the token the agent wants in Authorization. */
  podIdentityToken = 'eyJhbGciOiJSUzI1NiJ9.pod-identity.sig'
  private imdsTokens = new Set<string>()

  constructor(accessKeyId: string, secret: string) {
    this.keys.set(accessKeyId, { secret, who: 'arn:aws:iam::123456789012:user/muster' })
  }

  /** Temporary keys, as STS and the metadata service hand them out. */
  issue(who: string): { AccessKeyId: string; SecretAccessKey: string; SessionToken: string; Expiration: string } {
    const id = `ASIA${crypto.randomUUID().replace(/-/g, '').slice(0, 16).toUpperCase()}`
    const secret = crypto.randomUUID().replace(/-/g, '') + crypto.randomUUID().replace(/-/g, '').slice(0, 8)
    const token = `IQoJb3JpZ2luX2Vj${crypto.randomUUID().replace(/-/g, '')}`
    const expiresAt = Date.now() + 3600_000
    this.keys.set(id, { secret, sessionToken: token, expiresAt, who })
    return { AccessKeyId: id, SecretAccessKey: secret, SessionToken: token, Expiration: new Date(expiresAt).toISOString().replace(/\.\d{3}Z$/, 'Z') }
  }

  /** Recomputes the signature from what arrived; the refusal AWS would send, or who signed. */
  check(req: Request, url: URL, body: string, service: 'ec2' | 'sts', regions: string[]): { error: Response } | { region: string; key: Key } {
    const err = service === 'sts' ? stsError : ec2Error
    const auth = req.headers.get('authorization') ?? ''
    const m = auth.match(/^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/([a-z0-9]+)\/aws4_request, SignedHeaders=([a-z0-9;-]+), Signature=([0-9a-f]{64})$/)
    const denied = service === 'sts' ? err(403, 'InvalidClientTokenId', 'The security token included in the request is invalid.') : err(401, 'AuthFailure', 'AWS was not able to validate the provided access credentials')
    if (!m || m[4] !== service) return { error: denied }
    const [, keyId, date, region, , signed, signature] = m as unknown as string[]
    const key = this.keys.get(keyId!)
    if (!key || (key.expiresAt !== undefined && key.expiresAt < Date.now())) return { error: denied }
    if (key.sessionToken !== undefined && req.headers.get('x-amz-security-token') !== key.sessionToken) return { error: denied }
    if (!regions.includes(region!)) return { error: err(401, 'AuthFailure', 'Credential should be scoped to a valid region.') }
    const amzDate = req.headers.get('x-amz-date') ?? ''
    const at = Date.parse(amzDate.replace(/^(\d{4})(\d\d)(\d\d)T(\d\d)(\d\d)(\d\d)Z$/, '$1-$2-$3T$4:$5:$6Z'))
    if (!Number.isFinite(at) || Math.abs(Date.now() - at) > 5 * 60_000 || !amzDate.startsWith(date!)) return { error: err(400, 'RequestExpired', `Request has expired. Timestamp date is ${amzDate}`) }
    const names = signed!.split(';')
    if (!names.includes('host') || !names.includes('x-amz-date')) return { error: err(403, 'SignatureDoesNotMatch', 'host and x-amz-date must be signed') }
    const canonical = [req.method, url.pathname || '/', '', names.map((n) => `${n}:${(req.headers.get(n) ?? '').trim()}\n`).join(''), signed, hex(body)].join('\n')
    const toSign = ['AWS4-HMAC-SHA256', amzDate, `${date}/${region}/${service}/aws4_request`, hex(canonical)].join('\n')
    const k = mac(mac(mac(mac(`AWS4${key.secret}`, date!), region!), service), 'aws4_request')
    if (createHmac('sha256', k).update(toSign).digest('hex') !== signature) {
      return { error: err(403, 'SignatureDoesNotMatch', 'The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method. Consult the service documentation for details.') }
    }
    return { region: region!, key }
  }

  /** STS's Query API (https://docs.aws.amazon.com/STS/latest/APIReference/). */
  async sts(req: Request, url: URL, regions: string[]): Promise<Response> {
    const body = await req.text()
    const p = new URLSearchParams(body)
    const action = p.get('Action') ?? ''
    this.stsCalls.push(action)
    if (p.get('Version') !== '2011-06-15') return stsError(400, 'InvalidAction', 'Could not find operation for version')
    const ok = (result: string, creds: ReturnType<AwsIdentity['issue']>, extra = '') =>
      new Response(
        `<${action}Response xmlns="${STS_NS}"><${result}><Credentials><AccessKeyId>${creds.AccessKeyId}</AccessKeyId><SecretAccessKey>${creds.SecretAccessKey}</SecretAccessKey><SessionToken>${creds.SessionToken}</SessionToken><Expiration>${creds.Expiration}</Expiration></Credentials>${extra}</${result}><ResponseMetadata><RequestId>${crypto.randomUUID()}</RequestId></ResponseMetadata></${action}Response>`,
        { headers: { 'content-type': 'text/xml' } },
      )
    if (action === 'AssumeRoleWithWebIdentity') {
      if (p.get('WebIdentityToken') !== this.webIdentityToken) return stsError(400, 'InvalidIdentityToken', 'Couldn\'t retrieve verification key from your identity provider')
      if (p.get('RoleArn') !== this.webRoleArn) return stsError(403, 'AccessDenied', 'Not authorized to perform sts:AssumeRoleWithWebIdentity')
      return ok('AssumeRoleWithWebIdentityResult', this.issue(`${this.webRoleArn}/${p.get('RoleSessionName')}`))
    }
    const check = this.check(req, url, body, 'sts', regions)
    if ('error' in check) return check.error
    if (action !== 'AssumeRole') return stsError(400, 'InvalidAction', `Could not find operation ${action}`)
    const session = p.get('RoleSessionName') ?? ''
    if (!/^[\w+=,.@-]{2,64}$/.test(session)) return stsError(400, 'ValidationError', "1 validation error detected: Value at 'roleSessionName' failed to satisfy constraint")
    if (p.get('RoleArn') !== this.roleArn || (this.externalId !== null && p.get('ExternalId') !== this.externalId)) {
      return stsError(403, 'AccessDenied', `User: ${check.key.who} is not authorized to perform: sts:AssumeRole on resource: ${p.get('RoleArn')}`)
    }
    return ok('AssumeRoleResult', this.issue(`${this.roleArn.replace(':role/', ':assumed-role/')}/${session}`), `<AssumedRoleUser><Arn>${this.roleArn}/${session}</Arn></AssumedRoleUser>`)
  }

  /** The container credentials endpoints: the same JSON shape as the metadata service's, without Code. */
  container(req: Request, url: URL): Response {
    if (url.pathname === '/v1/credentials' && req.headers.get('authorization') !== this.podIdentityToken) return Response.json({ Code: 'AccessDeniedException', Message: 'invalid token' }, { status: 403 })
    if (url.pathname !== '/v1/credentials' && url.pathname !== this.containerRelativeUri) return Response.json({ Code: 'NotFound', Message: 'no role' }, { status: 404 })
    const c = this.issue(`arn:aws:sts::123456789012:assumed-role/muster-container/${url.pathname === '/v1/credentials' ? 'eks-pod' : 'ecs-task'}`)
    return Response.json({ AccessKeyId: c.AccessKeyId, SecretAccessKey: c.SecretAccessKey, Token: c.SessionToken, Expiration: c.Expiration, RoleArn: 'arn:aws:iam::123456789012:role/muster-container' })
  }

  /** IMDSv2 (https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/configuring-instance-metadata-service.html): no token, 401. */
  async imds(req: Request, url: URL): Promise<Response> {
    if (url.pathname === '/latest/api/token') {
      // the answer's IP TTL runs out one hop short: the client hears nothing
      if (this.imdsHopLimit) await Bun.sleep(5000)
      const ttl = Number(req.headers.get('x-aws-ec2-metadata-token-ttl-seconds'))
      if (req.method !== 'PUT' || !(ttl >= 1 && ttl <= 21600)) return new Response(null, { status: 400 })
      const t = `AQAEA${crypto.randomUUID()}`
      this.imdsTokens.add(t)
      return new Response(t)
    }
    if (!this.imdsTokens.has(req.headers.get('x-aws-ec2-metadata-token') ?? '')) return new Response(null, { status: 401 })
    const base = '/latest/meta-data/iam/security-credentials/'
    if (!url.pathname.startsWith(base) || !this.instanceRole) return new Response(null, { status: 404 })
    if (url.pathname === base) return new Response(this.instanceRole)
    if (url.pathname !== `${base}${this.instanceRole}`) return new Response(null, { status: 404 })
    const c = this.issue(`arn:aws:sts::123456789012:assumed-role/${this.instanceRole}/i-0instance`)
    return Response.json({ Code: 'Success', LastUpdated: new Date().toISOString(), Type: 'AWS-HMAC', AccessKeyId: c.AccessKeyId, SecretAccessKey: c.SecretAccessKey, Token: c.SessionToken, Expiration: c.Expiration })
  }
}
