// Through dist/muster, for every provider: the first create answer is lost
// (and EC2, Compute Engine and Hetzner do not show the new machine at first),
// yet each provision ends ready with exactly one machine at its provider. Each
// fake machine boots for real from its first-boot data, in a network namespace
// of its own (test/fakes/cloud-machine.ts): join.sh downloads the Platform's
// binary, runs `muster worker join --cloud-identity` (AWS, GCP, Azure by what
// their cloud signs; Hetzner, DigitalOcean with the token from its root-only
// file, bound to the server), then the Agent, which heartbeats until ready.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { runMuster, startServe } from '../helpers/binary.ts'
import { tmpDir, waitFor } from '../helpers/tmp.ts'
import { startAwsFake } from '../fakes/aws.ts'
import { startAzureFake } from '../fakes/azure.ts'
import type { FakeServer } from '../fakes/common.ts'
import { startDigitalOceanFake } from '../fakes/digitalocean.ts'
import { startGcpFake } from '../fakes/gcp.ts'
import { startHetznerFake } from '../fakes/hetzner.ts'
import { bootCloudMachine, type CloudMachine } from '../fakes/cloud-machine.ts'
import { describeWithNetns, Network } from '../helpers/netns.ts'
import { makeClouds, metadataFor, startGoogleCerts } from './identity/_clouds.ts'
import type { ProviderName } from '../../src/wire/cloud.ts'

describeWithNetns('a lost create answer, through dist/muster, at every provider', () => {
  let net: Network
  beforeAll(() => {
    net = Network.bare(['lost-hetzner', 'lost-digitalocean', 'lost-aws', 'lost-azure', 'lost-gcp'])
  })
  afterAll(() => net?.destroy())

  test('each provision ends ready with exactly one machine, which joined from its own first-boot data', { timeout: 240_000 }, async () => {
    using dir = tmpDir('muster-cloud-lost-')
    const clouds = makeClouds(dir.path)
    const google = startGoogleCerts({})
    const ports: number[] = []
    const hz = startHetznerFake()
    const dof = startDigitalOceanFake()
    const aws = startAwsFake()
    const az = startAzureFake()
    const gcp = await startGcpFake()
    const fakes: Record<ProviderName, FakeServer> = { hetzner: hz, digitalocean: dof, aws, azure: az, gcp }
    const machines = new Map<string, CloudMachine>()
    for (const [name, f] of Object.entries(fakes)) {
      f.book.bootMs = 300
      f.book.onBoot = (m) =>
        void bootCloudMachine(net.host(`lost-${name}`), { userData: m.userData, metadata: metadataFor(clouds, name, m), platformPorts: ports, dir: `${dir.path}/${name}-${m.id}`, agentEnv: { MUSTER_AGENT_HEARTBEAT_MS: '300' } }).then((b) => machines.set(`${name}/${m.id}`, b))
      f.book.onDelete = (m) => void machines.get(`${name}/${m.id}`)?.stop()
      f.loseCreates(1)
    }
    for (const f of [aws, gcp, hz]) f.book.hiddenMs = 1500
    try {
      await using serve = await startServe(`${dir.path}/platform`, ['--enrollment-port', '0', '--enrollment-address', '127.0.0.1', '--cloud-identity-roots', clouds.rootsFile], {
        MUSTER_CLOUD_GCP_CERTS_URL: google.url,
        MUSTER_PROBE_INTERVAL_MS: '300',
        MUSTER_CLOUD_RECONCILE_MS: '300',
        MUSTER_CLOUD_HETZNER_URL: hz.url,
        MUSTER_CLOUD_DIGITALOCEAN_URL: dof.url,
        MUSTER_CLOUD_AWS_URL: aws.url,
        MUSTER_CLOUD_AZURE_URL: az.url,
        MUSTER_CLOUD_AZURE_LOGIN_URL: az.url,
        MUSTER_CLOUD_GCP_URL: gcp.url,
        MUSTER_CLOUD_GCP_TOKEN_URL: gcp.tokenUrl,
      })
      const enrollUrl = (await serve.waitForLog(/enrollment listener on (https:\/\/\S+)/))[1]!
      ports.push(Number(new URL(enrollUrl).port), Number(new URL(serve.url).port))
      const { token: apiToken } = JSON.parse((await runMuster(['admin', 'api-token', '--data-dir', `${dir.path}/platform`, '--json'])).stdout) as { token: string }
      const cli = async (args: string[], stdin?: string) => {
        const r = await runMuster(['cloud', ...args], { env: { MUSTER_URL: serve.url, MUSTER_TOKEN: apiToken }, stdin })
        if (r.code !== 0) throw new Error(`muster cloud ${args.join(' ')}: ${r.stderr}`)
        return JSON.parse(r.stdout) as Record<string, unknown>
      }
      const credentials: Record<ProviderName, string> = {
        hetzner: hz.token,
        digitalocean: dof.token,
        aws: JSON.stringify({ accessKeyId: aws.accessKeyId, secretAccessKey: aws.secretAccessKey, region: 'eu-central-1' }),
        azure: JSON.stringify({ tenantId: az.tenantId, clientId: az.clientId, clientSecret: az.clientSecret, subscriptionId: az.subscriptionId, resourceGroup: az.resourceGroup }),
        gcp: JSON.stringify(gcp.key),
      }
      const where: Record<ProviderName, [string, string]> = { hetzner: ['fsn1', 'cx22'], digitalocean: ['ams3', 's-1vcpu-1gb'], aws: ['eu-central-1', 't3.small'], azure: ['westeurope', 'Standard_B2s'], gcp: ['europe-west1-b', 'e2-medium'] }
      const ids = new Map<ProviderName, string>()
      for (const provider of Object.keys(fakes) as ProviderName[]) {
        await cli(['connect', '--provider', provider, '--json'], `${credentials[provider]}\n`)
        const [region, size] = where[provider]
        const prv = await cli(['provision', '--provider', provider, '--name', `lost-${provider}`, '--region', region, '--size', size, '--role', 'build', '--json'])
        ids.set(provider, prv.id as string)
      }

      for (const [provider, id] of ids) {
        const ready = await waitFor(
          async () => {
            const r = await cli(['provisions', id, '--json'])
            if (r.state === 'failed') throw new Error(`${provider} failed: ${r.reason}`)
            return r.state === 'ready' ? r : null
          },
          { timeoutMs: 90_000, intervalMs: 400, what: `${provider} ready (machines: ${[...machines.entries()].map(([k, m]) => `${k}: ${m.log()}`).join('\n')})` },
        )
        expect(ready).toMatchObject({ node: { name: `lost-${provider}`, state: 'ready' }, role: 'build' })
        const f = fakes[provider]
        expect(f.book.created).toHaveLength(1)
        expect(f.book.machines.size).toBe(1)
        // the machine that joined is the one the provider made, from the first-boot data it carried
        const booted = [...machines.entries()].filter(([k]) => k.startsWith(`${provider}/`))
        expect(booted).toHaveLength(1)
        expect((await booted[0]![1].booted).code).toBe(0)
      }
      const nodes = JSON.parse((await runMuster(['nodes', 'list', '--json'], { env: { MUSTER_URL: serve.url, MUSTER_TOKEN: apiToken } })).stdout) as { nodes: { name: string; state: string }[] }
      expect(nodes.nodes.filter((n) => n.name.startsWith('lost-')).map((n) => n.state)).toEqual(['ready', 'ready', 'ready', 'ready', 'ready'])

      // the audit has every provision, by the API token's name
      const audit = (await cli(['audit', '--json'])).entries as { action: string; principal: string; target: string | null; outcome: string }[]
      expect(audit.filter((e) => e.action === 'provision').map((e) => [e.target, e.outcome]).sort()).toEqual((Object.keys(fakes) as ProviderName[]).map((p) => [`lost-${p}`, 'ok']).sort())
      for (const [provider, id] of ids) {
        expect((await cli(['release', id, '--json'])).state).toBe('released')
        expect(fakes[provider].book.machines.size).toBe(0)
      }
    } finally {
      await Promise.all([...machines.values()].map((m) => m.stop()))
      await Promise.all(Object.values(fakes).map((f) => f.stop()))
      google.stop()
    }
  })
})
