// Through dist/muster, at every provider: `cloud provision` → the provider fake
// makes the machine → the machine boots from its real first-boot data in a
// network namespace of its own (join.sh run by sh; install.sh installs the
// binary it downloads from the Platform; `worker join --cloud-identity` asks
// the metadata service at 169.254.169.254 / metadata.google.internal) → joins →
// ready. No join token reached AWS, GCP or Azure; Hetzner's and DigitalOcean's
// token is bound to the server, and their nodes joined from it.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { writeFileSync } from 'node:fs'
import { mkdtempSync, rmSync } from 'node:fs'
import type { ProviderName } from '../../../src/wire/cloud.ts'
import { runMuster, startServe } from '../../helpers/binary.ts'
import { describeWithNetns, Network } from '../../helpers/netns.ts'
import { waitFor } from '../../helpers/tmp.ts'
import { startAwsFake } from '../../fakes/aws.ts'
import { startAzureFake } from '../../fakes/azure.ts'
import { bootCloudMachine, type CloudMachine } from '../../fakes/cloud-machine.ts'
import type { FakeServer } from '../../fakes/common.ts'
import { startDigitalOceanFake } from '../../fakes/digitalocean.ts'
import { startGcpFake } from '../../fakes/gcp.ts'
import { startHetznerFake } from '../../fakes/hetzner.ts'
import { documentFor, makeClouds, metadataFor, startGoogleCerts } from './_clouds.ts'
import { identityProofId, signEnrollProof } from '../../../src/crypto/enroll-proof.ts'
import { newCert } from '../../helpers/certs.ts'

const PROVIDERS: ProviderName[] = ['aws', 'gcp', 'azure', 'hetzner', 'digitalocean']

describeWithNetns('cloud identity joins through dist/muster', () => {
  let net: Network
  // short: the relays' Unix sockets live here
  const dir = mkdtempSync('/tmp/mid-')
  beforeAll(() => {
    net = Network.bare(PROVIDERS.map((p) => `m-${p}`))
  })
  afterAll(() => {
    net?.destroy()
    rmSync(dir, { recursive: true, force: true })
  })

  test('provision at each provider → boots from its first-boot data → joins by its identity → ready; no mjt_ at AWS, GCP, Azure', { timeout: 300_000 }, async () => {
    const clouds = makeClouds(dir)
    const google = startGoogleCerts({})
    const fakes: Record<ProviderName, FakeServer> = { hetzner: startHetznerFake(), digitalocean: startDigitalOceanFake(), aws: startAwsFake(), azure: startAzureFake(), gcp: await startGcpFake() }
    const machines = new Map<ProviderName, CloudMachine>()
    const ports: number[] = []
    try {
      await using serve = await startServe(`${dir}/platform`, ['--enrollment-port', '0', '--enrollment-address', '127.0.0.1', '--cloud-identity-roots', clouds.rootsFile], {
        MUSTER_CLOUD_RECONCILE_MS: '300',
        MUSTER_CLOUD_HETZNER_URL: fakes.hetzner.url,
        MUSTER_CLOUD_DIGITALOCEAN_URL: fakes.digitalocean.url,
        MUSTER_CLOUD_AWS_URL: fakes.aws.url,
        MUSTER_CLOUD_AZURE_URL: fakes.azure.url,
        MUSTER_CLOUD_AZURE_LOGIN_URL: fakes.azure.url,
        MUSTER_CLOUD_GCP_URL: fakes.gcp.url,
        MUSTER_CLOUD_GCP_TOKEN_URL: (fakes.gcp as FakeServer & { tokenUrl: string }).tokenUrl,
        MUSTER_CLOUD_GCP_CERTS_URL: google.url,
      })
      const enrollUrl = (await serve.waitForLog(/enrollment listener on (https:\/\/\S+)/))[1]!
      ports.push(Number(new URL(enrollUrl).port), Number(new URL(serve.url).port))
      for (const provider of PROVIDERS) {
        const f = fakes[provider]
        f.book.bootMs = 100
        f.book.onBoot = (m) => {
          const host = net.host(`m-${provider}`)
          void bootCloudMachine(host, { userData: m.userData, metadata: metadataFor(clouds, provider, m), platformPorts: ports, dir: `${dir}/${provider}`, agentEnv: { MUSTER_AGENT_HEARTBEAT_MS: '300' } }).then((b) => machines.set(provider, b))
        }
      }
      const { token: apiToken } = JSON.parse((await runMuster(['admin', 'api-token', '--data-dir', `${dir}/platform`, '--json'])).stdout) as { token: string }
      const env = { MUSTER_URL: serve.url, MUSTER_TOKEN: apiToken }
      const cli = async (args: string[], stdin?: string) => {
        const r = await runMuster(args, { env, stdin })
        if (r.code !== 0) throw new Error(`muster ${args.join(' ')}: ${r.stderr}`)
        return JSON.parse(r.stdout) as Record<string, unknown>
      }
      const az = fakes.azure as ReturnType<typeof startAzureFake>
      const aws = fakes.aws as ReturnType<typeof startAwsFake>
      const credentials: Record<ProviderName, string> = {
        hetzner: (fakes.hetzner as ReturnType<typeof startHetznerFake>).token,
        digitalocean: (fakes.digitalocean as ReturnType<typeof startDigitalOceanFake>).token,
        aws: JSON.stringify({ accessKeyId: aws.accessKeyId, secretAccessKey: aws.secretAccessKey, region: 'eu-central-1' }),
        azure: JSON.stringify({ tenantId: az.tenantId, clientId: az.clientId, clientSecret: az.clientSecret, subscriptionId: az.subscriptionId, resourceGroup: az.resourceGroup }),
        gcp: JSON.stringify((fakes.gcp as Awaited<ReturnType<typeof startGcpFake>>).key),
      }
      const where: Record<ProviderName, [string, string]> = { hetzner: ['fsn1', 'cx22'], digitalocean: ['ams3', 's-1vcpu-1gb'], aws: ['eu-central-1', 't3.small'], azure: ['westeurope', 'Standard_B2s'], gcp: ['europe-west1-b', 'e2-medium'] }
      const ids = new Map<ProviderName, string>()
      for (const provider of PROVIDERS) {
        await cli(['cloud', 'connect', '--provider', provider, '--json'], `${credentials[provider]}\n`)
        const [region, size] = where[provider]
        ids.set(provider, (await cli(['cloud', 'provision', '--provider', provider, '--name', `id-${provider}`, '--region', region, '--size', size, '--json'])).id as string)
      }
      for (const [provider, id] of ids) {
        await waitFor(
          async () => {
            const r = await cli(['cloud', 'provisions', id, '--json'])
            if (r.state === 'failed') throw new Error(`${provider} failed: ${r.reason}\n${machines.get(provider)?.log()}`)
            return r.state === 'ready' ? r : null
          },
          { timeoutMs: 150_000, intervalMs: 500, what: `${provider} ready (machine: ${machines.get(provider)?.log() ?? 'not booted'})` },
        )
        expect((await machines.get(provider)!.booted).code).toBe(0)
      }
      // nothing that joins by itself reached the three clouds that sign identities
      for (const provider of ['aws', 'gcp', 'azure'] as const) {
        const sent = JSON.stringify(fakes[provider].createBodies) + fakes[provider].book.created.map((m) => m.userData).join('')
        expect(sent).not.toContain('mjt_')
        expect(fakes[provider].book.created[0]!.userData).toContain(`MUSTER_PROVIDER='${provider}'`)
      }
      // the attack through dist/muster: the AWS machine's document replayed with another key, from anywhere
      const awsMachine = fakes.aws.book.created[0]!
      const kc = await newCert('id-aws')
      const replay = await fetch(`${enrollUrl}/api/v1/nodes/enroll`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ identity: { provider: 'aws', document: await documentFor(clouds, 'aws', awsMachine) }, nodeId: 'id-aws', certPem: kc.certPem, ...signEnrollProof({ keyPem: kc.keyPem, certPem: kc.certPem, nodeId: 'id-aws', tokenId: identityProofId('aws') }) }),
        tls: { rejectUnauthorized: false },
      })
      expect(replay.status).toBe(403)
      expect(await replay.json()).toEqual({ error: { code: 'enrollment-refused', message: 'Enrollment refused.' } })
      // the audit says how each joined, and why the replay was refused
      const audit = (await cli(['nodes', 'audit', '--json'])) as { entries: { outcome: string; reason: string | null; nodeId: string }[] }
      for (const provider of ['aws', 'gcp', 'azure'] as const) {
        expect(audit.entries.find((e) => e.nodeId === `id-${provider}` && e.outcome === 'enrolled')?.reason).toMatch(/^identity: (instance|VM) /)
      }
      expect(audit.entries.find((e) => e.nodeId === 'id-aws' && e.outcome === 'refused')?.reason).toBe(`identity: instance ${awsMachine.id} already joined`)
    } finally {
      for (const m of machines.values()) await m.stop()
      for (const f of Object.values(fakes)) await f.stop()
      google.stop()
    }
  })
})

describe('cloud identity flags through dist/muster', () => {
  test('a roots file that is not what it should be stops serve with what to fix; an unknown cloud is a usage error', async () => {
    const d = mkdtempSync('/tmp/mid-flags-')
    try {
      writeFileSync(`${d}/roots.json`, JSON.stringify({ aws: { 'eu-central-1': 'not a certificate' } }))
      const serve = await runMuster(['serve', '--data-dir', `${d}/p`, '--port', '0', '--cloud-identity-roots', `${d}/roots.json`])
      expect(serve.code).toBe(1)
      expect(serve.stderr).toContain(`--cloud-identity-roots ${d}/roots.json: aws.eu-central-1 is not a PEM certificate. Expected {"aws": {"REGION": "PEM"}, "gcp": {"KEY ID": "PEM"}, "azure": ["PEM"]}.`)
      const join = await runMuster(['worker', 'join', '--platform-url', 'https://127.0.0.1:1', '--node-id', 'w1', '--platform-fingerprint', `sha256:${'0'.repeat(64)}`, '--cloud-identity', 'oracle', '--data-dir', `${d}/w`])
      expect(join.code).toBe(2)
      expect(join.stderr).toContain('--cloud-identity oracle: expected one of aws, gcp, azure, hetzner, digitalocean')
    } finally {
      rmSync(d, { recursive: true, force: true })
    }
  })
})
