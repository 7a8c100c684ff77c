// Where the keys that sign EC2 calls come from, so a Platform can hold none:
// - {"accessKeyId","secretAccessKey"}: kept sealed, used as they are; with
//   "roleArn" (and "externalId") they only assume that role, and EC2 is
//   called as the role (the key needs nothing but sts:AssumeRole);
// - {"ambient":true}: the Platform's own, found the way the AWS SDKs'
//   default chain looks (@aws-sdk/credential-provider-node): the environment,
//   a web identity token file, the container credentials endpoint (ECS:
//   AWS_CONTAINER_CREDENTIALS_RELATIVE_URI; EKS Pod Identity and others:
//   AWS_CONTAINER_CREDENTIALS_FULL_URI with AWS_CONTAINER_AUTHORIZATION_TOKEN(_FILE)),
//   then the EC2 instance metadata service v2;
// - {"roleArn","externalId"?}: a role assumed through STS AssumeRole with the
//   ambient keys (https://docs.aws.amazon.com/STS/latest/APIReference/API_AssumeRole.html).
// Temporary keys are kept in memory until five minutes before they expire.
import { readFileSync } from 'node:fs'
import { MusterError } from '../../errors.ts'
import { awsUrl, LINK_LOCAL_METADATA, type AwsCredentials, type ProviderContext } from '../provider.ts'
import { queryCall, textOf, type AwsKeys } from './aws-query.ts'
import { child, type XmlNode } from './xml.ts'

const STS_VERSION = '2011-06-15'
const REFRESH_BEFORE_MS = 5 * 60_000
const IMDS_TIMEOUT_MS = 2_000

export class AwsCredentialSource {
  private cached: AwsKeys | null = null

  constructor(
    private readonly creds: AwsCredentials,
    private readonly ctx: ProviderContext,
    readonly home: string,
  ) {}

  /** A label for the account that holds no secret. */
  label(): string {
    const c = this.creds
    if ('accessKeyId' in c) return `${c.roleArn ? `${c.roleArn} via ` : ''}${c.accessKeyId.slice(0, 4)}…${c.accessKeyId.slice(-4)} (${this.home})`
    if ('roleArn' in c) return `${c.roleArn} (${this.home})`
    return `ambient credentials (${this.home})`
  }

  async keys(): Promise<AwsKeys> {
    const c = this.creds
    if ('accessKeyId' in c && !c.roleArn) return c
    if (this.cached && (this.cached.expiresAt === undefined || this.cached.expiresAt - REFRESH_BEFORE_MS > Date.now())) return this.cached
    // the stored key assumes the role itself; without one, the Platform's ambient keys do
    const base = 'accessKeyId' in c ? { accessKeyId: c.accessKeyId, secretAccessKey: c.secretAccessKey, ...(c.sessionToken ? { sessionToken: c.sessionToken } : {}) } : await this.ambient()
    this.cached = 'roleArn' in c && c.roleArn ? await this.assumeRole(base, c.roleArn, c.externalId) : base
    return this.cached
  }

  private stsUrl(): string {
    return this.ctx.endpoints.awsSts ?? awsUrl('sts', this.home)
  }

  /** 1. environment  2. web identity token file  3. container credentials  4. instance metadata (IMDSv2). */
  private async ambient(): Promise<AwsKeys> {
    const env = this.ctx.env
    if (env.AWS_ACCESS_KEY_ID && env.AWS_SECRET_ACCESS_KEY) {
      return { accessKeyId: env.AWS_ACCESS_KEY_ID, secretAccessKey: env.AWS_SECRET_ACCESS_KEY, ...(env.AWS_SESSION_TOKEN ? { sessionToken: env.AWS_SESSION_TOKEN } : {}) }
    }
    if (env.AWS_WEB_IDENTITY_TOKEN_FILE && env.AWS_ROLE_ARN) return this.webIdentity(env.AWS_WEB_IDENTITY_TOKEN_FILE, env.AWS_ROLE_ARN, env.AWS_ROLE_SESSION_NAME)
    if (env.AWS_CONTAINER_CREDENTIALS_RELATIVE_URI || env.AWS_CONTAINER_CREDENTIALS_FULL_URI) return this.container()
    let imds = ''
    if (env.AWS_EC2_METADATA_DISABLED?.toLowerCase() !== 'true') {
      const got = await this.instanceMetadata()
      if ('keys' in got) return got.keys
      imds = ` ${got.why}`
    }
    throw new MusterError(
      'cloud-credentials-refused',
      `aws: no ambient credentials on this Platform (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, AWS_WEB_IDENTITY_TOKEN_FILE with AWS_ROLE_ARN, AWS_CONTAINER_CREDENTIALS_RELATIVE_URI/FULL_URI, or an EC2 instance profile).${imds}`,
    )
  }

  /**
   * The container credentials endpoint (ECS task roles, EKS Pod Identity): a relative URI on
   * 169.254.170.2, or a full URI (https anywhere; http only to this machine or the link-local
   * container endpoints), with an authorization token when one is given (re-read: it rotates).
   */
  private async container(): Promise<AwsKeys> {
    const env = this.ctx.env
    const rel = env.AWS_CONTAINER_CREDENTIALS_RELATIVE_URI
    const url = rel ? `${this.ctx.endpoints.awsContainer}${rel.startsWith('/') ? '' : '/'}${rel}` : env.AWS_CONTAINER_CREDENTIALS_FULL_URI!
    let u: URL
    try {
      u = new URL(url)
    } catch {
      throw new MusterError('cloud-credentials-refused', `aws: the container credentials URI ${url} is not a URL.`)
    }
    const local = ['127.0.0.1', 'localhost', '[::1]', ...LINK_LOCAL_METADATA].includes(u.hostname)
    if (!rel && u.protocol !== 'https:' && !(u.protocol === 'http:' && local)) {
      throw new MusterError('cloud-credentials-refused', `aws: AWS_CONTAINER_CREDENTIALS_FULL_URI must be https, or http to a loopback or container metadata address (169.254.170.2, 169.254.170.23), got ${u.origin}.`)
    }
    let auth = env.AWS_CONTAINER_AUTHORIZATION_TOKEN
    if (env.AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE) {
      try {
        auth = readFileSync(env.AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE, 'utf8').trim()
      } catch (e) {
        throw new MusterError('cloud-credentials-refused', `aws: cannot read AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE ${env.AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE}: ${(e as NodeJS.ErrnoException).code ?? 'unreadable'}.`)
      }
    }
    let status = 0
    let j: { AccessKeyId?: string; SecretAccessKey?: string; Token?: string; Expiration?: string; Code?: string; Message?: string } = {}
    try {
      const res = await fetch(u, { redirect: 'manual', headers: auth ? { authorization: auth } : {}, signal: AbortSignal.timeout(IMDS_TIMEOUT_MS) })
      status = res.status
      j = JSON.parse(await res.text())
    } catch (e) {
      if (status === 0) throw new MusterError('cloud-credentials-refused', `aws: the container credentials endpoint ${u.origin} did not answer (${(e as Error).name === 'TimeoutError' ? 'timeout' : ((e as { code?: string }).code ?? 'network error')}).`)
    }
    if (status !== 200 || !j.AccessKeyId || !j.SecretAccessKey) throw new MusterError('cloud-credentials-refused', `aws: the container credentials endpoint ${u.origin} gave no credentials (${status}${j.Code ? ` ${j.Code}` : ''}${j.Message ? `: ${j.Message}` : ''}).`)
    return { accessKeyId: j.AccessKeyId, secretAccessKey: j.SecretAccessKey, ...(j.Token ? { sessionToken: j.Token } : {}), ...(j.Expiration ? { expiresAt: Date.parse(j.Expiration) } : {}) }
  }

  /** AssumeRoleWithWebIdentity: unsigned, the token file's content is the credential (re-read each time: it rotates). */
  private async webIdentity(file: string, roleArn: string, session = 'muster'): Promise<AwsKeys> {
    let token: string
    try {
      token = readFileSync(file, 'utf8').trim()
    } catch (e) {
      throw new MusterError('cloud-credentials-refused', `aws: cannot read AWS_WEB_IDENTITY_TOKEN_FILE ${file}: ${(e as NodeJS.ErrnoException).code ?? 'unreadable'}.`)
    }
    const r = await queryCall({ service: 'sts', url: this.stsUrl(), region: this.home, action: 'AssumeRoleWithWebIdentity', version: STS_VERSION, params: { RoleArn: roleArn, RoleSessionName: session, WebIdentityToken: token }, keys: null, policy: this.ctx.retry, idempotent: true })
    return keysFrom(child(r, 'AssumeRoleWithWebIdentityResult', 'Credentials'))
  }

  private async assumeRole(base: AwsKeys, roleArn: string, externalId: string | undefined): Promise<AwsKeys> {
    const params: Record<string, string> = { RoleArn: roleArn, RoleSessionName: 'muster-platform', DurationSeconds: '3600', ...(externalId ? { ExternalId: externalId } : {}) }
    const r = await queryCall({ service: 'sts', url: this.stsUrl(), region: this.home, action: 'AssumeRole', version: STS_VERSION, params, keys: base, policy: this.ctx.retry, idempotent: true })
    return keysFrom(child(r, 'AssumeRoleResult', 'Credentials'))
  }

  /**
   * IMDSv2 (https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/instance-metadata-security-credentials.html):
   * PUT a session token, then the role's name, then its keys. When the token PUT gets no answer, why:
   * inside a container on EC2 that is the classic hop limit of 1 (the answer dies one hop short).
   */
  private async instanceMetadata(): Promise<{ keys: AwsKeys } | { why: string }> {
    const base = this.ctx.endpoints.awsImds
    const get = async (path: string, init: RequestInit) => {
      const res = await fetch(`${base}${path}`, { ...init, redirect: 'manual', signal: AbortSignal.timeout(IMDS_TIMEOUT_MS) })
      return { status: res.status, text: await res.text() }
    }
    let t: { status: number; text: string }
    try {
      t = await get('/latest/api/token', { method: 'PUT', headers: { 'X-aws-ec2-metadata-token-ttl-seconds': '21600' } })
    } catch (e) {
      const err = e as { name?: string; code?: string }
      const how = err.name === 'TimeoutError' ? `no answer within ${IMDS_TIMEOUT_MS / 1000}s` : (err.code ?? 'no answer')
      const hop = err.name === 'TimeoutError' || err.code === 'ECONNRESET'
      return { why: `The instance metadata service gave no IMDSv2 token (PUT /latest/api/token: ${how})${hop ? ': hop limit? On EC2 inside a container the token answer needs 2 hops: aws ec2 modify-instance-metadata-options --instance-id ID --http-put-response-hop-limit 2' : ': not on EC2?'}.` }
    }
    if (t.status !== 200) return { why: `The instance metadata service refused an IMDSv2 token (PUT /latest/api/token answered ${t.status}${t.status === 403 ? ': the metadata service is turned off for this instance' : ''}).` }
    const headers = { 'X-aws-ec2-metadata-token': t.text.trim() }
    const role = await get('/latest/meta-data/iam/security-credentials/', { headers })
    const name = role.status === 200 ? role.text.split('\n')[0]?.trim() : ''
    if (!name) throw new MusterError('cloud-credentials-refused', 'aws: this EC2 instance has no instance profile (no role in its metadata).')
    const k = await get(`/latest/meta-data/iam/security-credentials/${encodeURIComponent(name)}`, { headers })
    let j: { Code?: string; AccessKeyId?: string; SecretAccessKey?: string; Token?: string; Expiration?: string } = {}
    try {
      j = JSON.parse(k.text)
    } catch {}
    if (k.status !== 200 || j.Code !== 'Success' || !j.AccessKeyId || !j.SecretAccessKey) throw new MusterError('cloud-credentials-refused', `aws: the instance metadata service gave no credentials for role ${name} (${j.Code ?? k.status}).`)
    return { keys: { accessKeyId: j.AccessKeyId, secretAccessKey: j.SecretAccessKey, ...(j.Token ? { sessionToken: j.Token } : {}), ...(j.Expiration ? { expiresAt: Date.parse(j.Expiration) } : {}) } }
  }
}

function keysFrom(c: XmlNode | undefined): AwsKeys {
  const accessKeyId = textOf(c, 'AccessKeyId')
  const secretAccessKey = textOf(c, 'SecretAccessKey')
  if (!accessKeyId || !secretAccessKey) throw new MusterError('cloud-provider-error', 'aws sts answered without credentials.')
  const expiration = textOf(c, 'Expiration')
  return { accessKeyId, secretAccessKey, sessionToken: textOf(c, 'SessionToken'), ...(expiration ? { expiresAt: Date.parse(expiration) } : {}) }
}
