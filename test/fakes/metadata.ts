// A fake cloud metadata service, one per fake machine, reached where the real
// one is: 169.254.169.254 (and metadata.google.internal) inside the machine's
// network namespace (`bun test/fakes/metadata.ts CONFIG` runs it there). It
// behaves as each cloud documents:
//   aws    IMDSv2 only: PUT /latest/api/token with X-aws-ec2-metadata-token-ttl-seconds
//          (1-21600), the token on every GET (401 without), X-Forwarded-For refused (403),
//          and the hop limit: a token PUT from beyond the machine itself is never answered
//   gcp    Metadata-Flavor: Google required (403), X-Forwarded-For refused; identity tokens
//          for ?audience= (required), format=full adds the compute_engine claims
//   azure  Metadata: true required (400), api-version required, X-Forwarded-For refused;
//          attested data signs the nonce given (at most 32 alphanumeric characters)
//   hetzner, digitalocean  the server's id
// It signs with the test CAs of its config (test/fakes/identity-sign.ts).
import { createPrivateKey, randomBytes } from 'node:crypto'
import { AsnConvert } from '@peculiar/asn1-schema'
import { Certificate } from '@peculiar/asn1-x509'
import { base64Lines, signAwsBer, signDer, signGcpToken, type TestCert } from './identity-sign.ts'

export interface MetadataConfig {
  cloud: 'aws' | 'gcp' | 'azure' | 'hetzner' | 'digitalocean'
  /** The signer (PEM certificate and PKCS#8 key) and, for Azure, the certificates the document carries. */
  signer?: { certPem: string; keyPem: string }
  bag?: string[]
  aws?: { document: Record<string, unknown>; hopLimit?: number }
  gcp?: { kid: string; email: string; computeEngine: Record<string, unknown>; expiresInS?: number }
  azure?: { vmId: string; subscriptionId: string; validForS?: number }
  serverId?: string
  publicIp?: string
}

const json = (status: number, body: unknown, headers: Record<string, string> = {}) => new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json', ...headers } })
const text = (status: number, body: string, headers: Record<string, string> = {}) => new Response(body, { status, headers: { 'content-type': 'text/plain', ...headers } })

function testCert(c: { certPem: string; keyPem: string }): TestCert {
  const der = new Uint8Array(Buffer.from(c.certPem.replace(/-----[A-Z ]+-----|\s+/g, ''), 'base64'))
  return { pem: c.certPem, der, key: createPrivateKey(c.keyPem), keyPem: c.keyPem, cert: AsnConvert.parse(der, Certificate) }
}

/** Azure writes `MM/DD/YY HH:MM:SS -0000`. */
const azureTime = (t: number) => {
  const d = new Date(t)
  const p = (n: number) => String(n).padStart(2, '0')
  return `${p(d.getUTCMonth() + 1)}/${p(d.getUTCDate())}/${p(d.getUTCFullYear() % 100)} ${p(d.getUTCHours())}:${p(d.getUTCMinutes())}:${p(d.getUTCSeconds())} -0000`
}

/** The service's handler; `peer` is the request's source address (the hop limit is judged by it). */
export function metadataHandler(cfg: MetadataConfig, isLocal: (peer: string) => boolean = () => true) {
  const sessions = new Map<string, number>()
  const signer = cfg.signer ? testCert(cfg.signer) : undefined
  const bag = (cfg.bag ?? []).map((pem) => ({ cert: AsnConvert.parse(new Uint8Array(Buffer.from(pem.replace(/-----[A-Z ]+-----|\s+/g, ''), 'base64')), Certificate) }) as TestCert)
  return async (req: Request, peer: string): Promise<Response> => {
    const url = new URL(req.url)
    const path = url.pathname
    switch (cfg.cloud) {
      case 'aws': {
        if (req.headers.has('x-forwarded-for')) return text(403, 'Forbidden')
        if (path === '/latest/api/token') {
          if (req.method !== 'PUT') return text(405, 'Method Not Allowed')
          const ttl = Number(req.headers.get('x-aws-ec2-metadata-token-ttl-seconds'))
          if (!Number.isInteger(ttl) || ttl < 1 || ttl > 21600) return text(400, 'Bad Request')
          // hop limit 1: the answer would die one hop beyond the instance (it is never sent)
          if ((cfg.aws?.hopLimit ?? 1) <= 1 && !isLocal(peer)) return new Promise<Response>(() => {})
          const token = randomBytes(32).toString('base64url')
          sessions.set(token, Date.now() + ttl * 1000)
          return text(200, token, { 'x-aws-ec2-metadata-token-ttl-seconds': String(ttl) })
        }
        const token = req.headers.get('x-aws-ec2-metadata-token') ?? ''
        if ((sessions.get(token) ?? 0) < Date.now()) return text(401, 'Unauthorized')
        const doc = cfg.aws?.document ?? {}
        if (path === '/latest/dynamic/instance-identity/document') return text(200, JSON.stringify(doc, null, 2))
        if (path === '/latest/dynamic/instance-identity/rsa2048' && signer) return text(200, base64Lines(signAwsBer({ content: new TextEncoder().encode(JSON.stringify(doc, null, 2)), signer })))
        if (path === '/latest/meta-data/instance-id') return text(200, String(doc.instanceId))
        if (path === '/latest/meta-data/public-ipv4' && cfg.publicIp) return text(200, cfg.publicIp)
        return text(404, 'Not Found')
      }
      case 'gcp': {
        const flavor = { 'Metadata-Flavor': 'Google' }
        if (req.headers.get('metadata-flavor') !== 'Google' || req.headers.has('x-forwarded-for')) return text(403, 'Missing required header: Metadata-Flavor', flavor)
        if (path === '/computeMetadata/v1/instance/service-accounts/default/identity' && signer && cfg.gcp) {
          const audience = url.searchParams.get('audience')
          if (!audience) return text(400, 'non-empty audience parameter required', flavor)
          const claims: Record<string, unknown> = { iss: 'https://accounts.google.com', aud: audience, azp: '1122334455', sub: '1122334455', email: cfg.gcp.email, email_verified: true }
          if (url.searchParams.get('format') === 'full') claims.google = { compute_engine: cfg.gcp.computeEngine }
          return text(200, await signGcpToken(signer, cfg.gcp.kid, claims, { expiresInS: cfg.gcp.expiresInS }), flavor)
        }
        if (path === '/computeMetadata/v1/instance/id') return text(200, String(cfg.gcp?.computeEngine.instance_id), flavor)
        return text(404, 'Not Found', flavor)
      }
      case 'azure': {
        if (req.headers.get('metadata') !== 'true' || req.headers.has('x-forwarded-for')) return json(400, { error: 'Bad request. Required metadata header not specified' })
        if (!url.searchParams.get('api-version')) return json(400, { error: 'Bad request. api-version was not specified in the request.', newest_versions: ['2025-04-07'] })
        if (path === '/metadata/attested/document' && signer && cfg.azure) {
          const nonce = url.searchParams.get('nonce') ?? String(Date.now()).slice(-10)
          if (!/^[A-Za-z0-9]{1,32}$/.test(nonce)) return json(400, { error: 'Bad request. Nonce must be an alphanumeric string of at most 32 characters.' })
          const now = Date.now()
          const content = { licenseType: '', nonce, plan: { name: '', product: '', publisher: '' }, sku: '24_04-lts-gen2', subscriptionId: cfg.azure.subscriptionId, timeStamp: { createdOn: azureTime(now), expiresOn: azureTime(now + (cfg.azure.validForS ?? 6 * 3600) * 1000) }, vmId: cfg.azure.vmId }
          const der = signDer({ content: new TextEncoder().encode(JSON.stringify(content)), signer, bag, digestOid: '1.2.840.113549.1.1.11' })
          return json(200, { encoding: 'pkcs7', signature: Buffer.from(der).toString('base64') })
        }
        return json(404, { error: 'Not found' })
      }
      case 'hetzner':
        if (path === '/hetzner/v1/metadata/instance-id') return text(200, cfg.serverId ?? '')
        if (path === '/hetzner/v1/metadata/public-ipv4' && cfg.publicIp) return text(200, cfg.publicIp)
        return text(404, 'Not Found')
      case 'digitalocean':
        if (path === '/metadata/v1/id') return text(200, cfg.serverId ?? '')
        if (path === '/metadata/v1/interfaces/public/0/ipv4/address' && cfg.publicIp) return text(200, cfg.publicIp)
        return text(404, 'Not Found')
    }
  }
}

// Run inside a machine's namespace: `bun test/fakes/metadata.ts CONFIG.json`, on 169.254.169.254:80.
if (import.meta.main) {
  const cfg = JSON.parse(await Bun.file(process.argv[2]!).text()) as MetadataConfig
  const handle = metadataHandler(cfg, (peer) => peer === '169.254.169.254' || peer.startsWith('127.'))
  const server = Bun.serve({ hostname: '169.254.169.254', port: 80, fetch: (req, s) => handle(req, s.requestIP(req)?.address ?? '') })
  process.stdout.write(`metadata service for ${cfg.cloud} on ${server.hostname}:${server.port}\n`)
}
