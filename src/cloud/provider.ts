// The one interface every cloud provider client speaks, the credential shapes
// each accepts, and where each API lives (overridable so tests use fakes).
import * as v from 'valibot'
import { MusterError } from '../errors.ts'
import { invalid } from '../http/validate.ts'

export const PROVIDERS = ['hetzner', 'digitalocean', 'aws', 'azure', 'gcp'] as const
export type ProviderName = (typeof PROVIDERS)[number]

export function isProvider(value: string): value is ProviderName {
  return (PROVIDERS as readonly string[]).includes(value)
}

export interface Region {
  id: string
  name: string
  available: boolean
}

export interface Size {
  id: string
  cpus: number
  memoryMB: number
  diskGB: number | null
  /** Only where the provider's own list answers it (Hetzner, DigitalOcean). */
  priceMonthly: number | null
}

/** What muster needs to know of a machine; `providerStatus` is the provider's own word. */
export type MachineStatus = 'pending' | 'running' | 'stopped' | 'failed' | 'deleting'

export interface Machine {
  id: string
  status: MachineStatus
  providerStatus: string
  address: string | null
}

export interface MachineRef {
  requestId: string
  name: string
  region: string
}

export interface CreateMachine {
  name: string
  region: string
  size: string
  /** cloud-init first-boot data, plain text; each client encodes it the way its API wants. */
  userData: string
  /** Stable across retries: creating twice with one id yields one machine. */
  requestId: string
  role: 'general' | 'build'
}

export interface CloudProvider {
  readonly name: ProviderName
  /** The most first-boot data the API accepts, in bytes of plain text. */
  readonly maxUserDataBytes: number
  /** Proves the credentials by a list call; answers a non-secret label for the account. */
  validate(): Promise<{ account: string | null }>
  regions(): Promise<Region[]>
  sizes(region?: string): Promise<Size[]>
  /** The machine an earlier create with this request id made, if any (a resumed create adopts it). */
  findMachine(ref: MachineRef): Promise<Machine | null>
  /** Creates the machine; idempotent on `requestId` where the API allows, and never a second one for an id findMachine knows. */
  createMachine(req: CreateMachine): Promise<Machine>
  /** null when the provider no longer knows the machine. */
  getMachine(id: string): Promise<Machine | null>
  /** Deletes the machine; a machine already gone is not an error. */
  deleteMachine(id: string): Promise<void>
}

// ---- credentials --------------------------------------------------------------

const Str = (what: string) => v.pipe(v.string(), v.trim(), v.minLength(1, `${what} is required`), v.maxLength(8192))
export const TokenCredentials = v.object({ token: v.pipe(Str('token'), v.regex(/^[\x21-\x7e]+$/, 'expected one printable token')) })
export const AwsCredentials = v.object({
  accessKeyId: v.pipe(Str('accessKeyId'), v.regex(/^[A-Z0-9]{16,128}$/, 'expected an access key id like AKIA…')),
  secretAccessKey: Str('secretAccessKey'),
  sessionToken: v.optional(Str('sessionToken')),
  region: v.optional(v.pipe(Str('region'), v.regex(/^[a-z]{2}(-[a-z]+)+-\d$/, 'expected a region like us-east-1'))),
})
export const AzureCredentials = v.object({
  tenantId: Str('tenantId'),
  clientId: Str('clientId'),
  clientSecret: Str('clientSecret'),
  subscriptionId: v.pipe(Str('subscriptionId'), v.regex(/^[0-9a-fA-F-]{36}$/, 'expected a subscription id (a GUID)')),
  resourceGroup: v.pipe(Str('resourceGroup'), v.regex(/^[-\w._()]{1,90}$/, 'expected a resource group name')),
})
export const GcpCredentials = v.object({
  type: v.literal('service_account', 'expected a service account key (type service_account)'),
  project_id: v.pipe(Str('project_id'), v.regex(/^[a-z][-a-z0-9]{4,28}[a-z0-9]$/, 'expected a project id')),
  private_key: v.pipe(Str('private_key'), v.includes('PRIVATE KEY', 'expected a PEM private key')),
  client_email: v.pipe(Str('client_email'), v.email()),
  private_key_id: v.optional(v.string()),
})

export type TokenCredentials = v.InferOutput<typeof TokenCredentials>
export type AwsCredentials = v.InferOutput<typeof AwsCredentials>
export type AzureCredentials = v.InferOutput<typeof AzureCredentials>
export type GcpCredentials = v.InferOutput<typeof GcpCredentials>
export type Credentials = TokenCredentials | AwsCredentials | AzureCredentials | GcpCredentials

const SCHEMAS = { hetzner: TokenCredentials, digitalocean: TokenCredentials, aws: AwsCredentials, azure: AzureCredentials, gcp: GcpCredentials }

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
  const r = v.safeParse(SCHEMAS[provider], value)
  if (r.success) return r.output
  throw invalid(r.issues[0], 'credentials.')
}

// ---- where each API lives ---------------------------------------------------------

export interface CloudEndpoints {
  hetzner: string
  digitalocean: string
  /** One URL for every region (tests); unset means https://ec2.REGION.amazonaws.com. */
  aws: string | null
  azure: string
  azureLogin: string
  gcp: string
  gcpToken: string
}

const DEFAULTS: Record<keyof CloudEndpoints, [env: string, url: string | null]> = {
  hetzner: ['MUSTER_CLOUD_HETZNER_URL', 'https://api.hetzner.cloud/v1'],
  digitalocean: ['MUSTER_CLOUD_DIGITALOCEAN_URL', 'https://api.digitalocean.com/v2'],
  aws: ['MUSTER_CLOUD_AWS_URL', null],
  azure: ['MUSTER_CLOUD_AZURE_URL', 'https://management.azure.com'],
  azureLogin: ['MUSTER_CLOUD_AZURE_LOGIN_URL', 'https://login.microsoftonline.com'],
  gcp: ['MUSTER_CLOUD_GCP_URL', 'https://compute.googleapis.com/compute/v1'],
  gcpToken: ['MUSTER_CLOUD_GCP_TOKEN_URL', 'https://oauth2.googleapis.com/token'],
}

/** The API base URLs: each from its MUSTER_CLOUD_*_URL variable, else the provider's own. */
export function endpointsFromEnv(env: Record<string, string | undefined> = process.env): CloudEndpoints {
  const out = {} as Record<keyof CloudEndpoints, string | null>
  for (const [key, [name, url]] of Object.entries(DEFAULTS) as [keyof CloudEndpoints, [string, string | null]][]) {
    const given = env[name]?.trim()
    out[key] = given ? checkEndpoint(name, given) : url
  }
  return out as CloudEndpoints
}

/** Credentials travel to these URLs, so plain http is allowed only to this machine. */
export function checkEndpoint(name: string, url: string): string {
  let u: URL
  try {
    u = new URL(url)
  } catch {
    throw new MusterError('not-configured', `${name} is not a URL: ${url}`)
  }
  const loopback = ['127.0.0.1', 'localhost', '[::1]'].includes(u.hostname)
  if (u.protocol !== 'https:' && !(u.protocol === 'http:' && loopback)) throw new MusterError('not-configured', `${name} must be an https URL (plain http only to 127.0.0.1), got ${url}`)
  return url.replace(/\/+$/, '')
}
