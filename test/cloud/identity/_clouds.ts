// The clouds' signers, made by the tests: an AWS region certificate per region
// used, a Google signing key by key id, an Azure chain (root → intermediate →
// a signer for a name under metadata.azure.com) — given to the Platform through
// `serve --cloud-identity-roots`; Google's certificate endpoint, faked with its
// Expires; and what a fake machine's metadata service attests, from what the
// provider fake made.
import { writeFileSync } from 'node:fs'
import type { FakeMachine } from '../../fakes/common.ts'
import { makeCert, type TestCert } from '../../fakes/identity-sign.ts'
import type { MetadataConfig } from '../../fakes/metadata.ts'

export const AWS_ACCOUNT = '123456789012'
export const GCP_KID = 'f2e11986282de93f27b264fd2a4de192993dcb8c'

export interface Clouds {
  aws: Map<string, TestCert>
  gcp: TestCert
  azure: { root: TestCert; intermediate: TestCert; signer: TestCert }
  /** The roots file for serve --cloud-identity-roots. */
  rootsFile: string
}

export function makeClouds(dir: string, awsRegions: string[] = ['eu-central-1']): Clouds {
  const aws = new Map(awsRegions.map((r) => [r, makeCert({ cn: `test AWS ${r}`, o: 'Amazon Web Services LLC' })]))
  const gcp = makeCert({ cn: 'test google signer' })
  const root = makeCert({ cn: 'test Microsoft root', ca: true })
  const intermediate = makeCert({ cn: 'test Microsoft intermediate', ca: true, issuer: root })
  const signer = makeCert({ cn: 'westeurope.metadata.azure.com', dns: ['westeurope.metadata.azure.com'], issuer: intermediate })
  const rootsFile = `${dir}/identity-roots.json`
  writeFileSync(rootsFile, JSON.stringify({ aws: Object.fromEntries([...aws].map(([r, c]) => [r, c.pem])), gcp: { [GCP_KID]: gcp.pem }, azure: [root.pem] }))
  return { aws, gcp, azure: { root, intermediate, signer }, rootsFile }
}

/** What the metadata service of a machine a provider fake made attests. */
export function metadataFor(clouds: Clouds | null, provider: string, m: FakeMachine, o: { project?: string; subscriptionId?: string } = {}): MetadataConfig {
  const pem = (c: TestCert) => ({ certPem: c.pem, keyPem: c.keyPem })
  if (!clouds) return { cloud: provider as 'hetzner' | 'digitalocean', serverId: m.id }
  switch (provider) {
    case 'aws': {
      const signer = clouds.aws.get(m.region)
      if (!signer) throw new Error(`no test certificate for ${m.region}`)
      const document = { accountId: AWS_ACCOUNT, architecture: 'x86_64', availabilityZone: `${m.region}a`, billingProducts: null, devpayProductCodes: null, marketplaceProductCodes: null, imageId: m.extra.imageId ?? 'ami-0a1b2c3d4e5f60718', instanceId: m.id, instanceType: m.size, kernelId: null, pendingTime: new Date(m.createdAt).toISOString().replace(/\.\d+Z$/, 'Z'), privateIp: '172.31.4.7', ramdiskId: null, region: m.region, version: '2017-09-30' }
      return { cloud: 'aws', signer: pem(signer), aws: { document } }
    }
    case 'gcp':
      return { cloud: 'gcp', signer: pem(clouds.gcp), gcp: { kid: GCP_KID, email: '1122334455-compute@developer.gserviceaccount.com', computeEngine: { instance_creation_timestamp: Math.floor(m.createdAt / 1000), instance_id: m.id, instance_name: m.name, project_id: o.project ?? 'muster-test-4711', project_number: 1122334455, zone: m.region } } }
    case 'azure':
      return { cloud: 'azure', signer: pem(clouds.azure.signer), bag: [clouds.azure.signer.pem, clouds.azure.intermediate.pem], azure: { vmId: m.id, subscriptionId: o.subscriptionId ?? '00000000-1111-2222-3333-444444444444' } }
    default:
      return { cloud: provider as 'hetzner' | 'digitalocean', serverId: m.id }
  }
}

/** Google's certificate endpoint (oauth2/v1/certs): key id → PEM, with the Expires Google sends; counts its fetches. */
export function startGoogleCerts(keys: Record<string, string>, maxAgeS = 3600) {
  let fetches = 0
  const server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    fetch() {
      fetches++
      return new Response(JSON.stringify(keys), { headers: { 'content-type': 'application/json; charset=UTF-8', expires: new Date(Date.now() + maxAgeS * 1000).toUTCString(), 'cache-control': `public, max-age=${maxAgeS}, must-revalidate, no-transform` } })
    },
  })
  return { url: `http://127.0.0.1:${server.port}/oauth2/v1/certs`, fetches: () => fetches, keys, stop: () => server.stop(true) }
}

/**
 * The document a machine's metadata service would give for its identity join, signed by the test
 * clouds (GCP: for `audience`; Azure: carrying `nonce`).
 */
export async function documentFor(clouds: Clouds, provider: 'aws' | 'gcp' | 'azure', m: FakeMachine, o: { audience?: string; nonce?: string } = {}): Promise<string> {
  const { metadataHandler } = await import('../../fakes/metadata.ts')
  const handle = metadataHandler(metadataFor(clouds, provider, m))
  const get = async (path: string, headers: Record<string, string>, method = 'GET') => (await handle(new Request(`http://169.254.169.254${path}`, { method, headers }), '127.0.0.1')).text()
  if (provider === 'aws') {
    const token = await get('/latest/api/token', { 'x-aws-ec2-metadata-token-ttl-seconds': '60' }, 'PUT')
    return get('/latest/dynamic/instance-identity/rsa2048', { 'x-aws-ec2-metadata-token': token })
  }
  if (provider === 'gcp') return get(`/computeMetadata/v1/instance/service-accounts/default/identity?${new URLSearchParams({ audience: o.audience ?? '', format: 'full' })}`, { 'metadata-flavor': 'Google' })
  return (JSON.parse(await get(`/metadata/attested/document?${new URLSearchParams({ 'api-version': '2025-04-07', nonce: o.nonce ?? '' })}`, { metadata: 'true' })) as { signature: string }).signature
}
