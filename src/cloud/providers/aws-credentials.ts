// Where the keys that sign EC2 calls come from, so a Platform can hold none:
// - {"accessKeyId","secretAccessKey"}: kept sealed, used as they are;
// - {"ambient":true}: the Platform's own, found the way the AWS SDKs look
//   (environment, then a web identity token file, then the EC2 instance
//   metadata service v2);
// - {"roleArn","externalId"?}: a role assumed through STS AssumeRole with the
//   ambient keys (https://docs.aws.amazon.com/STS/latest/APIReference/API_AssumeRole.html).
// Temporary keys are kept in memory until five minutes before they expire.
import { readFileSync } from 'node:fs'
import { MusterError } from '../../errors.ts'
import type { AwsCredentials, ProviderContext } from '../provider.ts'
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
    if ('accessKeyId' in c) return `${c.accessKeyId.slice(0, 4)}…${c.accessKeyId.slice(-4)} (${this.home})`
    if ('roleArn' in c) return `${c.roleArn} (${this.home})`
    return `ambient credentials (${this.home})`
  }

  async keys(): Promise<AwsKeys> {
    const c = this.creds
    if ('accessKeyId' in c) return c
    if (this.cached && (this.cached.expiresAt === undefined || this.cached.expiresAt - REFRESH_BEFORE_MS > Date.now())) return this.cached
    const ambient = await this.ambient()
    this.cached = 'roleArn' in c ? await this.assumeRole(ambient, c.roleArn, c.externalId) : ambient
    return this.cached
  }

  private stsUrl(): string {
    return this.ctx.endpoints.awsSts ?? `https://sts.${this.home}.amazonaws.com`
  }

  /** 1. environment  2. web identity token file  3. instance metadata (IMDSv2). */
  private async ambient(): Promise<AwsKeys> {
    const env = this.ctx.env
    if (env.AWS_ACCESS_KEY_ID && env.AWS_SECRET_ACCESS_KEY) {
      return { accessKeyId: env.AWS_ACCESS_KEY_ID, secretAccessKey: env.AWS_SECRET_ACCESS_KEY, ...(env.AWS_SESSION_TOKEN ? { sessionToken: env.AWS_SESSION_TOKEN } : {}) }
    }
    if (env.AWS_WEB_IDENTITY_TOKEN_FILE && env.AWS_ROLE_ARN) return this.webIdentity(env.AWS_WEB_IDENTITY_TOKEN_FILE, env.AWS_ROLE_ARN, env.AWS_ROLE_SESSION_NAME)
    if (env.AWS_EC2_METADATA_DISABLED?.toLowerCase() !== 'true') {
      const keys = await this.instanceMetadata().catch((e: unknown) => {
        if (e instanceof MusterError) throw e
        return null
      })
      if (keys) return keys
    }
    throw new MusterError(
      'cloud-credentials-refused',
      'aws: no ambient credentials on this Platform (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, AWS_WEB_IDENTITY_TOKEN_FILE with AWS_ROLE_ARN, or an EC2 instance profile).',
    )
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
   * PUT a session token, then the role's name, then its keys. null when no metadata service answers.
   */
  private async instanceMetadata(): Promise<AwsKeys | null> {
    const base = this.ctx.endpoints.awsImds
    const get = async (path: string, init: RequestInit) => {
      const res = await fetch(`${base}${path}`, { ...init, redirect: 'manual', signal: AbortSignal.timeout(IMDS_TIMEOUT_MS) })
      return { status: res.status, text: await res.text() }
    }
    const t = await get('/latest/api/token', { method: 'PUT', headers: { 'X-aws-ec2-metadata-token-ttl-seconds': '21600' } })
    if (t.status !== 200) return null
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
    return { accessKeyId: j.AccessKeyId, secretAccessKey: j.SecretAccessKey, ...(j.Token ? { sessionToken: j.Token } : {}), ...(j.Expiration ? { expiresAt: Date.parse(j.Expiration) } : {}) }
  }
}

function keysFrom(c: XmlNode | undefined): AwsKeys {
  const accessKeyId = textOf(c, 'AccessKeyId')
  const secretAccessKey = textOf(c, 'SecretAccessKey')
  if (!accessKeyId || !secretAccessKey) throw new MusterError('cloud-provider-error', 'aws sts answered without credentials.')
  const expiration = textOf(c, 'Expiration')
  return { accessKeyId, secretAccessKey, sessionToken: textOf(c, 'SessionToken'), ...(expiration ? { expiresAt: Date.parse(expiration) } : {}) }
}
