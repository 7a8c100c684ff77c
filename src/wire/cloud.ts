// The wire contract of the cloud routes (/api/v1/cloud/…): request schemas
// and answer types, shared by the routes, the cloud service and the SDK
// (src/client/cloud.ts). Credentials go in and are never sent back.
import * as v from 'valibot'
import type { NodeStateName } from './nodes.ts'
import { NodeName } from './validate.ts'

export const PROVIDERS = ['hetzner', 'digitalocean', 'aws', 'azure', 'gcp'] as const
export type ProviderName = (typeof PROVIDERS)[number]

export function isProvider(value: string): value is ProviderName {
  return (PROVIDERS as readonly string[]).includes(value)
}

// ---- requests -------------------------------------------------------------

const Provider = v.picklist(PROVIDERS, `expected one of ${PROVIDERS.join(', ')}`)
/** A region or size id as the provider lists it. */
export const Slug = (what: string) => v.pipe(v.string(), v.regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/, `expected a ${what} id from \`muster cloud ${what === 'region' ? 'regions' : 'sizes'}\``))
const Role = v.picklist(['general', 'build'], 'expected general or build')

/** POST /api/v1/cloud/connections: credentials are a token string (Hetzner, DigitalOcean) or the provider's JSON object. */
export const Connect = v.object({ provider: Provider, credentials: v.union([v.pipe(v.string(), v.maxLength(16384)), v.record(v.string(), v.unknown())], 'expected the credentials as a string or a JSON object') })
/** POST /api/v1/cloud/provisions */
export const Provision = v.object({
  provider: Provider,
  name: NodeName,
  region: Slug('region'),
  size: Slug('size'),
  role: v.optional(Role, 'general'),
  /** Open the Agent port to the Platform's address only, and have the node give its address so the Platform probes it. */
  probe: v.optional(v.boolean()),
  /** Open 22 to this CIDR. */
  allowSshInbound: v.optional(v.pipe(v.string(), v.maxLength(64))),
})
export type ProvisionBody = v.InferInput<typeof Provision>
/** PUT /api/v1/cloud/scaling */
export const Scaling = v.object({
  enabled: v.optional(v.boolean()),
  maxMachines: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(1000))),
  cooldownMinutes: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(1440))),
  provider: v.optional(Provider),
  region: v.optional(Slug('region')),
  size: v.optional(Slug('size')),
  role: v.optional(Role),
})
export type ScalingBody = v.InferInput<typeof Scaling>

// ---- answers --------------------------------------------------------------

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
  /** The currency of priceMonthly (ISO 4217: Hetzner prices in EUR, VAT included; DigitalOcean in USD), null without a price. */
  currency: string | null
}

/** GET /api/v1/cloud/providers/:provider/regions */
export interface RegionList {
  provider: ProviderName
  regions: Region[]
}
/** GET /api/v1/cloud/providers/:provider/sizes */
export interface SizeList {
  provider: ProviderName
  region: string | null
  sizes: Size[]
}

export type ProvisionState = 'creating' | 'booting' | 'enrolling' | 'ready' | 'failed' | 'released'

/** A machine this Platform creates (POST, GET and DELETE /api/v1/cloud/provisions…). */
export interface ProvisionView {
  id: string
  provider: string
  name: string
  region: string
  size: string
  role: 'general' | 'build'
  origin: 'operator' | 'autoscale'
  requestedBy: string | null
  state: ProvisionState
  reason: string | null
  machineId: string | null
  machineStatus: string | null
  address: string | null
  /** What the machine lets in: the Agent port from the Platform, 22 from a CIDR. */
  inbound: { agentFrom: string | null; sshFrom: string | null }
  node: { name: string; state: NodeStateName } | null
  createdAt: string
  deadline: string
  readyAt: string | null
  releasedAt: string | null
}

/** A provider's connection (POST /api/v1/cloud/connections; in the status). */
export interface CloudConnection {
  provider: ProviderName
  connected: boolean
  account: string | null
  connectedAt: string | null
  connectedBy: string | null
  machines: number
}
/** DELETE /api/v1/cloud/connections/:provider */
export interface CloudDisconnected {
  provider: ProviderName
  connected: false
}

/** GET and PUT /api/v1/cloud/scaling: automatic scale-out. */
export interface CloudScaling {
  enabled: boolean
  maxMachines: number
  cooldownMinutes: number
  provider: string | null
  region: string | null
  size: string | null
  role: 'general' | 'build'
  lastRequestAt: string | null
  shortfallSince: string | null
}

/** GET /api/v1/cloud/status */
export interface CloudStatus {
  providers: CloudConnection[]
  provisioning: { available: boolean; reason?: string }
  machines: { total: number; starting: number; ready: number; failed: number }
  scaling: CloudScaling
}

/** One cloud action with its principal. */
export interface CloudAuditEntry {
  at: string
  action: string
  principal: string
  via: string
  provider: string | null
  target: string | null
  outcome: 'started' | 'ok' | 'failed'
  detail: string | null
}
/** GET /api/v1/cloud/audit: newest first. */
export interface CloudAudit {
  entries: CloudAuditEntry[]
}
