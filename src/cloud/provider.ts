// The one interface every cloud provider client speaks, the credential shapes
// each accepts, and where each API lives (overridable so tests use fakes).
import * as v from 'valibot'
import { MusterError } from '../errors.ts'
import { invalid } from '../wire/validate.ts'
import type { RetryPolicy } from './retry.ts'
import type { ProviderName, Region, Size } from '../wire/cloud.ts'
import { TUNABLES, tunable, type TunableName } from '../tunables.ts'

/** What muster needs to know of a machine; `providerStatus` is the provider's own word. */
export type MachineStatus = 'pending' | 'running' | 'stopped' | 'failed' | 'deleting'

export interface Machine {
  id: string
  status: MachineStatus
  providerStatus: string
  address: string | null
  /** An asynchronous create still being carried out (a GCP zone Operation's name); its failure is the provision's. */
  operation?: string | null
  /** Why a failed machine failed, in the provider's words with its code (EC2 StateReason, Azure ProvisioningState/failed/…). */
  reason?: string | null
  /** The id the cloud's identity document gives the machine (EC2 instance id, Compute Engine numeric id, Azure vmId). */
  attestedId?: string | null
  /** The account the machine is in, where the answer says (EC2 ownerId). */
  account?: string | null
  /** The create's idempotency token the machine carries (EC2 clientToken). */
  requestId?: string | null
}

export interface MachineRef {
  requestId: string
  name: string
  region: string
}

/** The Agent's port on a created machine (worker join's default). */
export const AGENT_PORT = 7381

/**
 * What a created machine lets in. By default nothing: the node joins without
 * an address and is ready on heartbeats alone. `agentFrom` (cloud provision
 * --probe) opens the Agent port to the Platform's address only; `sshFrom`
 * (--allow-ssh-inbound) opens 22 to one CIDR.
 */
export interface Inbound {
  agentFrom: string | null
  sshFrom: string | null
}

export const CLOSED: Inbound = { agentFrom: null, sshFrom: null }

export interface InboundRule {
  port: number
  cidr: string
}

export function inboundRules(i: Inbound): InboundRule[] {
  return [...(i.agentFrom ? [{ port: AGENT_PORT, cidr: i.agentFrom }] : []), ...(i.sshFrom ? [{ port: 22, cidr: i.sshFrom }] : [])]
}

/** A short, stable name for a set of rules: "closed", or 10 hex digits of their digest (names firewalls and groups). */
export function inboundKey(i: Inbound): string {
  const rules = inboundRules(i)
  if (rules.length === 0) return 'closed'
  return new Bun.CryptoHasher('sha256').update(rules.map((r) => `${r.port}/${r.cidr}`).join(',')).digest('hex').slice(0, 10)
}

export interface CreateMachine {
  name: string
  region: string
  size: string
  /** cloud-init first-boot data, plain text; each client encodes it the way its API wants. The same bytes on every attempt. */
  userData: string
  /** Stable across retries: creating twice with one id yields one machine. */
  requestId: string
  role: 'general' | 'build'
  inbound: Inbound
  /**
   * What the provider resolved once for this provision (AWS: the image and security group ids), kept
   * sealed with the first-boot data so every attempt sends the same parameters (see `pin`).
   */
  pins?: Record<string, string>
}

/** The CPU architecture of the muster binary a created machine installs; sizes and images follow it. */
export type Arch = 'x86_64' | 'arm64'

export interface CloudProvider {
  readonly name: ProviderName
  /** The most first-boot data the API accepts, in bytes as the API counts them (userDataBytes). */
  readonly maxUserDataBytes: number
  /** The size of first-boot data as the API counts it (AWS: the gzip it sends); default its UTF-8 bytes. */
  userDataBytes?(userData: string): number
  /**
   * Resolves, once per provision, what a create depends on that may change between attempts (AWS: the
   * newest image, the security group). Kept sealed with the first-boot data and given back as `pins`.
   */
  pin?(req: Omit<CreateMachine, 'userData' | 'pins'>): Promise<Record<string, string>>
  /** Proves the credentials by a list call; answers a non-secret label for the account. */
  validate(): Promise<{ account: string | null }>
  regions(): Promise<Region[]>
  /** Sizes that can run the binary: its architecture, offered in the region, not deprecated. */
  sizes(region?: string): Promise<Size[]>
  /** The machine an earlier create with this request id made, if any (a resumed create adopts it). */
  findMachine(ref: MachineRef): Promise<Machine | null>
  /** Creates the machine; idempotent on `requestId` where the API allows, and never a second one for an id findMachine knows. */
  createMachine(req: CreateMachine): Promise<Machine>
  /** null when the provider does not (or does not yet) know the machine. */
  getMachine(id: string): Promise<Machine | null>
  /** Deletes the machine; a machine already gone is not an error. */
  deleteMachine(id: string): Promise<void>
  /** Where an asynchronous create stands: its error in the provider's words once it failed, else null. */
  operationError?(machineId: string, operation: string): Promise<string | null>
  /** The account an identity document names for machines made with these credentials (GCP project, Azure subscription); null when learned from the create (AWS). */
  identityAccount?(): string | null
  /** Makes (once) the public address the machine will have, before its first-boot data is written (Azure: the metadata service gives none for Standard public IPs). */
  reserveAddress?(ref: MachineRef): Promise<string | null>
}

// ---- credentials --------------------------------------------------------------

const Str = (what: string) => v.pipe(v.string(), v.trim(), v.minLength(1, `${what} is required`), v.maxLength(8192))
const AwsRegion = v.optional(v.pipe(Str('region'), v.regex(/^[a-z]{2}(-[a-z]+)+-\d$/, 'expected a region like us-east-1')))
export const TokenCredentials = v.object({ token: v.pipe(Str('token'), v.regex(/^[\x21-\x7e]+$/, 'expected one printable token')) })
const RoleArn = v.pipe(Str('roleArn'), v.regex(/^arn:aws[a-z-]*:iam::\d{12}:role\/[\w+=,.@/-]{1,512}$/, 'expected a role ARN like arn:aws:iam::123456789012:role/muster'))
const ExternalId = v.optional(v.pipe(Str('externalId'), v.regex(/^[\w+=,.@:/-]{2,1224}$/, 'expected an external id (2-1224 characters)')))
/**
 * A long-lived access key (or temporary keys with their session token). With `roleArn` the key is used
 * only to assume that role through STS ("the key only needs sts:AssumeRole"), and EC2 is called as the role.
 */
export const AwsKeyCredentials = v.object({
  accessKeyId: v.pipe(Str('accessKeyId'), v.regex(/^[A-Z0-9]{16,128}$/, 'expected an access key id like AKIA…')),
  secretAccessKey: Str('secretAccessKey'),
  sessionToken: v.optional(Str('sessionToken')),
  roleArn: v.optional(RoleArn),
  externalId: ExternalId,
  region: AwsRegion,
})
/** No key kept: a role assumed through STS with the Platform's ambient credentials. */
export const AwsRoleCredentials = v.object({ roleArn: RoleArn, externalId: ExternalId, region: AwsRegion })
/** No key kept: the Platform's ambient credentials (environment, web identity token file, EC2 instance metadata). */
export const AwsAmbientCredentials = v.object({ ambient: v.literal(true, 'expected "ambient": true'), region: AwsRegion })
const AzureBase = {
  tenantId: Str('tenantId'),
  clientId: Str('clientId'),
  subscriptionId: v.pipe(Str('subscriptionId'), v.regex(/^[0-9a-fA-F-]{36}$/, 'expected a subscription id (a GUID)')),
  resourceGroup: v.pipe(Str('resourceGroup'), v.regex(/^[-\w._()]{1,90}$/, 'expected a resource group name')),
}
export const AzureSecretCredentials = v.object({ ...AzureBase, clientSecret: Str('clientSecret') })
/** Workload identity: a token file the platform rotates (AZURE_FEDERATED_TOKEN_FILE), sent as a client assertion. */
export const AzureFederatedCredentials = v.object({ ...AzureBase, federatedTokenFile: v.pipe(Str('federatedTokenFile'), v.startsWith('/', 'expected an absolute path')) })
export const GcpCredentials = v.object({
  type: v.literal('service_account', 'expected a service account key file (type service_account): create one with `gcloud iam service-accounts keys create`'),
  project_id: v.pipe(Str('project_id'), v.regex(/^[a-z][-a-z0-9]{4,28}[a-z0-9]$/, 'expected a project id')),
  private_key: v.pipe(Str('private_key'), v.includes('PRIVATE KEY', 'expected a PEM private key')),
  client_email: v.pipe(Str('client_email'), v.email()),
  private_key_id: v.optional(v.string()),
})

export type TokenCredentials = v.InferOutput<typeof TokenCredentials>
export type AwsKeyCredentials = v.InferOutput<typeof AwsKeyCredentials>
export type AwsRoleCredentials = v.InferOutput<typeof AwsRoleCredentials>
export type AwsAmbientCredentials = v.InferOutput<typeof AwsAmbientCredentials>
export type AwsCredentials = AwsKeyCredentials | AwsRoleCredentials | AwsAmbientCredentials
export type AzureCredentials = v.InferOutput<typeof AzureSecretCredentials> | v.InferOutput<typeof AzureFederatedCredentials>
export type GcpCredentials = v.InferOutput<typeof GcpCredentials>
export type Credentials = TokenCredentials | AwsCredentials | AzureCredentials | GcpCredentials

/** The schema for what was given: each provider's forms are told apart by the keys they carry. */
function schemaFor(provider: ProviderName, value: unknown) {
  const has = (k: string) => Boolean(value && typeof value === 'object' && k in value)
  switch (provider) {
    case 'hetzner':
    case 'digitalocean':
      return TokenCredentials
    case 'aws':
      // a stored key (with or without a role to assume through it), else a role assumed with the ambient keys, else ambient
      return has('accessKeyId') || has('secretAccessKey') ? AwsKeyCredentials : has('roleArn') ? AwsRoleCredentials : has('ambient') ? AwsAmbientCredentials : AwsKeyCredentials
    case 'azure':
      // both given: the client secret wins (as the seed and the Azure SDKs' EnvironmentCredential order them)
      return has('clientSecret') || !has('federatedTokenFile') ? AzureSecretCredentials : AzureFederatedCredentials
    case 'gcp':
      return GcpCredentials
  }
}

const camel = (k: string) => k.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase())

/**
 * Credentials from what an operator pasted: a bare token (Hetzner, DigitalOcean),
 * or JSON (AWS, Azure with snake_case or camelCase keys, GCP's key file as-is).
 * A refusal names the field, never its value.
 */
export function parseCredentials(provider: ProviderName, input: unknown): Credentials {
  let value = input
  if (typeof value === 'string') {
    const text = value.trim()
    if (text.startsWith('{')) {
      try {
        value = JSON.parse(text)
      } catch {
        throw new MusterError('invalid-request', `Invalid credentials: not valid JSON.`, { field: 'credentials' })
      }
    } else if (provider === 'hetzner' || provider === 'digitalocean') value = { token: text }
    else throw new MusterError('invalid-request', `Invalid credentials: ${provider} takes a JSON object (see \`muster cloud connect --help\`).`, { field: 'credentials' })
  }
  if (value && typeof value === 'object' && provider !== 'gcp') value = Object.fromEntries(Object.entries(value).map(([k, x]) => [camel(k), x]))
  if (provider === 'gcp' && value && typeof value === 'object' && (value as { type?: unknown }).type === 'external_account') {
    throw new MusterError(
      'invalid-request',
      'Invalid credentials: gcp workload identity federation (type external_account) is not supported: it carries no project id and needs a token exchange muster does not make. Give a service account key file (type service_account) instead.',
      { field: 'credentials.type' },
    )
  }
  const r = v.safeParse(schemaFor(provider, value), value)
  if (r.success) return r.output as Credentials
  throw invalid(r.issues[0], 'credentials.')
}

// ---- where each API lives ---------------------------------------------------------

export interface CloudEndpoints {
  hetzner: string
  digitalocean: string
  /** One URL for every region (AWS_ENDPOINT_URL_EC2, AWS_ENDPOINT_URL, tests); unset means each region's own (awsUrl). */
  aws: string | null
  /** STS for AssumeRole (AWS_ENDPOINT_URL_STS, AWS_ENDPOINT_URL); unset means the home region's own. */
  awsSts: string | null
  /** The EC2 instance metadata service (IMDSv2) for ambient credentials. */
  awsImds: string
  /** The ECS/EKS container credentials endpoint a relative AWS_CONTAINER_CREDENTIALS_RELATIVE_URI is read from. */
  awsContainer: string
  azure: string
  azureLogin: string
  gcp: string
  gcpToken: string
}

/** Each API's MUSTER_CLOUD_*_URL variable (its default is the provider's own, src/tunables.ts), then the AWS SDKs' own names. */
const ENDPOINTS: Record<keyof CloudEndpoints, [muster: TunableName, aws: string[]]> = {
  hetzner: ['MUSTER_CLOUD_HETZNER_URL', []],
  digitalocean: ['MUSTER_CLOUD_DIGITALOCEAN_URL', []],
  // AWS_ENDPOINT_URL_<SERVICE> and AWS_ENDPOINT_URL are the AWS SDKs' own names ("service-specific endpoints").
  aws: ['MUSTER_CLOUD_AWS_URL', ['AWS_ENDPOINT_URL_EC2', 'AWS_ENDPOINT_URL']],
  awsSts: ['MUSTER_CLOUD_AWS_STS_URL', ['AWS_ENDPOINT_URL_STS', 'AWS_ENDPOINT_URL']],
  awsContainer: ['MUSTER_CLOUD_AWS_CONTAINER_URL', []],
  // AWS_EC2_METADATA_SERVICE_ENDPOINT is the AWS SDKs' own name for this override.
  awsImds: ['MUSTER_CLOUD_AWS_IMDS_URL', ['AWS_EC2_METADATA_SERVICE_ENDPOINT']],
  azure: ['MUSTER_CLOUD_AZURE_URL', []],
  azureLogin: ['MUSTER_CLOUD_AZURE_LOGIN_URL', []],
  gcp: ['MUSTER_CLOUD_GCP_URL', []],
  gcpToken: ['MUSTER_CLOUD_GCP_TOKEN_URL', []],
}

/** The API base URLs: each from its MUSTER_CLOUD_*_URL variable, else the provider's own. */
export function endpointsFromEnv(env: Record<string, string | undefined> = process.env): CloudEndpoints {
  const out = {} as Record<keyof CloudEndpoints, string | null>
  for (const [key, [muster, aws]] of Object.entries(ENDPOINTS) as [keyof CloudEndpoints, [TunableName, string[]]][]) {
    const given: [string, string] | undefined = tunable(muster, env)?.trim() ? [muster, tunable(muster, env)!.trim()] : aws.filter((n) => env[n]?.trim()).map((n): [string, string] => [n, env[n]!.trim()])[0]
    out[key] = given ? checkEndpoint(given[0], given[1], key === 'awsImds' || key === 'awsContainer') : (TUNABLES[muster].default as string | null)
  }
  return out as CloudEndpoints
}

/** The metadata and container credential services the AWS SDKs reach over plain http (IMDS; ECS; EKS Pod Identity). */
export const LINK_LOCAL_METADATA = ['169.254.169.254', '[fd00:ec2::254]', '169.254.170.2', '169.254.170.23', '[fd00:ec2::23]']

/** An AWS service's own endpoint in a region: amazonaws.com, or amazonaws.com.cn in the China regions. */
export function awsUrl(service: 'ec2' | 'sts', region: string): string {
  return `https://${service}.${region}.amazonaws.com${region.startsWith('cn-') ? '.cn' : ''}`
}

/** Credentials travel to these URLs, so plain http is allowed only to this machine (and, for the metadata service, its link-local address). */
export function checkEndpoint(name: string, url: string, linkLocal = false): string {
  let u: URL
  try {
    u = new URL(url)
  } catch {
    throw new MusterError('not-configured', `${name} is not a URL: ${url}`)
  }
  const loopback = ['127.0.0.1', 'localhost', '[::1]'].includes(u.hostname) || (linkLocal && LINK_LOCAL_METADATA.includes(u.hostname))
  if (u.protocol !== 'https:' && !(u.protocol === 'http:' && loopback)) throw new MusterError('not-configured', `${name} must be an https URL (plain http only to 127.0.0.1), got ${url}`)
  return url.replace(/\/+$/, '')
}

/** The architecture of the binary created machines install: MUSTER_CLOUD_BINARY_ARCH, else this Platform's own. */
export function binaryArch(env: Record<string, string | undefined> = process.env): Arch {
  const given = tunable('MUSTER_CLOUD_BINARY_ARCH', env)?.trim().toLowerCase()
  if (given) {
    if (['x86_64', 'amd64', 'x64'].includes(given)) return 'x86_64'
    if (['arm64', 'aarch64'].includes(given)) return 'arm64'
    throw new MusterError('not-configured', `MUSTER_CLOUD_BINARY_ARCH must be x86_64 or arm64, got ${given}`)
  }
  return process.arch === 'arm64' ? 'arm64' : 'x86_64'
}

/** What every provider client is built with besides its credentials. */
export interface ProviderContext {
  endpoints: CloudEndpoints
  retry: RetryPolicy
  arch: Arch
  /** Where ambient credentials are read from (AWS): the Platform's environment. */
  env: Record<string, string | undefined>
}
