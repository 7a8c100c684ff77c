// The node asks its cloud's metadata service itself, at its real address, for
// what proves who it is (docs/cloud.md):
//   aws    IMDSv2: PUT /latest/api/token, then /latest/dynamic/instance-identity/rsa2048
//   gcp    metadata.google.internal …/service-accounts/default/identity?audience=URL&format=full
//          (Metadata-Flavor: Google)
//   azure  169.254.169.254/metadata/attested/document?nonce=N (Metadata: true)
//   hetzner, digitalocean  this server's id (their first-boot token is bound to it)
// Nothing here is sent anywhere but to the Platform this node authenticated.
import { MusterError } from '../errors.ts'
import type { IdentityProvider } from '../wire/nodes.ts'

export const CLOUD_IDENTITIES = ['aws', 'gcp', 'azure', 'hetzner', 'digitalocean'] as const
export type CloudIdentityName = (typeof CLOUD_IDENTITIES)[number]
/** The clouds whose document replaces the join token. */
export type SignedIdentity = IdentityProvider

const LINK_LOCAL = 'http://169.254.169.254'
const GCE = 'http://metadata.google.internal'
const AZURE_API = '2025-04-07'
const TRIES = 3

const where: Record<CloudIdentityName, string> = {
  aws: `the EC2 instance metadata service (${LINK_LOCAL})`,
  gcp: `the Compute Engine metadata server (${GCE})`,
  azure: `the Azure Instance Metadata Service (${LINK_LOCAL})`,
  hetzner: `the Hetzner Cloud metadata service (${LINK_LOCAL})`,
  digitalocean: `the DigitalOcean metadata service (${LINK_LOCAL})`,
}
const hint: Record<CloudIdentityName, string> = {
  aws: 'Run this on the EC2 instance the Platform created, not inside a container on it: the metadata service answers one hop away only (hop limit 1).',
  gcp: 'Run this on the Compute Engine instance the Platform created (metadata.google.internal must resolve).',
  azure: 'Run this on the Azure VM the Platform created.',
  hetzner: 'Run this on the Hetzner Cloud server the Platform created.',
  digitalocean: 'Run this on the droplet the Platform created.',
}

/** One request, a few tries (the metadata service can be slow while a machine boots), never redirected. */
async function ask(cloud: CloudIdentityName, url: string, init: RequestInit = {}): Promise<string> {
  let last = ''
  for (let i = 0; i < TRIES; i++) {
    try {
      const r = await fetch(url, { ...init, redirect: 'error', signal: AbortSignal.timeout(5000) })
      const text = await r.text()
      if (r.ok && text.trim()) return text.trim()
      last = `answered ${r.status}`
      if (r.status >= 400 && r.status < 500) break
    } catch (e) {
      last = (e as Error).message
    }
    if (i < TRIES - 1) await Bun.sleep(1000 * (i + 1))
  }
  throw new MusterError('not-configured', `${where[cloud]} did not give this machine's identity (${new URL(url).pathname}: ${last}). ${hint[cloud]}`)
}

/** AWS: the instance identity document's RSA-2048 PKCS#7, through an IMDSv2 session. */
export async function awsIdentityDocument(): Promise<string> {
  const token = await ask('aws', `${LINK_LOCAL}/latest/api/token`, { method: 'PUT', headers: { 'X-aws-ec2-metadata-token-ttl-seconds': '60' } })
  return ask('aws', `${LINK_LOCAL}/latest/dynamic/instance-identity/rsa2048`, { headers: { 'X-aws-ec2-metadata-token': token } })
}

/** GCP: an identity token for the Platform's enrollment URL, with the instance's claims (format=full). */
export function gcpIdentityToken(audience: string): Promise<string> {
  const q = new URLSearchParams({ audience, format: 'full' })
  return ask('gcp', `${GCE}/computeMetadata/v1/instance/service-accounts/default/identity?${q}`, { headers: { 'Metadata-Flavor': 'Google' } })
}

/** Azure: the attested data carrying the Platform's nonce; answers its PKCS#7 signature (base64). */
export async function azureAttestedDocument(nonce: string): Promise<string> {
  const q = new URLSearchParams({ 'api-version': AZURE_API, nonce })
  const text = await ask('azure', `${LINK_LOCAL}/metadata/attested/document?${q}`, { headers: { Metadata: 'true' } })
  let body: { encoding?: unknown; signature?: unknown }
  try {
    body = JSON.parse(text) as typeof body
  } catch {
    throw new MusterError('not-configured', `${where.azure} answered the attested document with something that is not JSON.`)
  }
  if (typeof body.signature !== 'string' || (body.encoding !== undefined && body.encoding !== 'pkcs7')) throw new MusterError('not-configured', `${where.azure} answered no PKCS#7 signature.`)
  return body.signature
}

/** Hetzner, DigitalOcean: this server's id, which the first-boot token is bound to. */
export async function serverId(cloud: 'hetzner' | 'digitalocean'): Promise<string> {
  const id = await ask(cloud, cloud === 'hetzner' ? `${LINK_LOCAL}/hetzner/v1/metadata/instance-id` : `${LINK_LOCAL}/metadata/v1/id`)
  if (!/^[A-Za-z0-9-]{1,64}$/.test(id)) throw new MusterError('not-configured', `${where[cloud]} gave a server id of an unexpected shape.`)
  return id
}
