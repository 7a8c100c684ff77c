// The whole path through dist/muster: a Platform started by the test with its
// enrollment listener, the Hetzner fake, and a fake machine that boots from the
// first-boot data it was given, in a network namespace of its own
// (test/fakes/cloud-machine.ts) — join.sh downloads the Platform's binary,
// checks it, joins with the token from its root-only file, bound to the server
// id its metadata service gives, and starts the Agent, which the Platform
// probes (--probe) — until ready.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { runMuster, startServe } from '../helpers/binary.ts'
import { tmpDir, waitFor } from '../helpers/tmp.ts'
import { startHetznerFake } from '../fakes/hetzner.ts'
import { bootCloudMachine, type CloudMachine } from '../fakes/cloud-machine.ts'
import { metadataFor } from './identity/_clouds.ts'
import { describeWithNetns, Network } from '../helpers/netns.ts'

describeWithNetns('cloud through dist/muster', () => {
  let net: Network
  beforeAll(() => {
    net = Network.bare(['cloud-e2e'])
  })
  afterAll(() => net?.destroy())

  test('connect from stdin, regions, sizes, provision → a machine that joins by itself and is ready, release, disconnect', { timeout: 180_000 }, async () => {
    using dir = tmpDir('muster-cloud-e2e-')
    await using hz = startHetznerFake()
    hz.book.bootMs = 400
    const machines = new Map<string, CloudMachine>()
    const ports: number[] = []
    // the machine's "public" address: a loopback address of its own, relayed to its Agent in the namespace
    const publicAddress = `127.${1 + (process.pid % 200)}.${Math.floor(Math.random() * 250) + 1}.${Math.floor(Math.random() * 250) + 1}`
    hz.book.onBoot = (m) =>
      void bootCloudMachine(net.host('cloud-e2e'), { userData: m.userData, metadata: metadataFor(null, 'hetzner', m), platformPorts: ports, dir: `${dir.path}/m${m.id}`, publicAddress, agentEnv: { MUSTER_AGENT_HEARTBEAT_MS: '300' } }).then((b) => machines.set(m.id, b))
    hz.book.onDelete = (m) => void machines.get(m.id)?.stop()
    try {
      await using serve = await startServe(`${dir.path}/platform`, ['--enrollment-port', '0', '--enrollment-address', '127.0.0.1'], {
        MUSTER_PROBE_INTERVAL_MS: '300',
        MUSTER_CLOUD_HETZNER_URL: hz.url,
        MUSTER_CLOUD_RECONCILE_MS: '300',
      })
      const enrollUrl = (await serve.waitForLog(/enrollment listener on (https:\/\/\S+)/))[1]!
      ports.push(Number(new URL(enrollUrl).port), Number(new URL(serve.url).port))
      const { token: apiToken } = JSON.parse((await runMuster(['admin', 'api-token', '--data-dir', `${dir.path}/platform`, '--json'])).stdout) as { token: string }
      const env = { MUSTER_URL: serve.url, MUSTER_TOKEN: apiToken }
      const cli = async (args: string[], stdin?: string) => {
        const r = await runMuster(['cloud', ...args], { env, stdin })
        return { ...r, json: () => JSON.parse(r.stdout) as Record<string, unknown> }
      }

      // credentials come from stdin (or a prompt); never argv
      const noInput = await cli(['connect', '--provider', 'hetzner'])
      expect(noInput.code).toBe(1)
      expect(noInput.stderr).toContain('no terminal')
      expect((await cli(['connect', '--provider', 'hetzner', '--token-value', 'x'])).code).toBe(2)
      const wrong = await cli(['connect', '--provider', 'hetzner'], 'not-the-token\n')
      expect(wrong.code).toBe(1)
      expect(wrong.stderr).toContain('hetzner refused the credentials (401 unauthorized: unable to authenticate)')
      const connected = await cli(['connect', '--provider', 'hetzner', '--json'], `${hz.token}\n`)
      expect(connected.code).toBe(0)
      expect(connected.json()).toMatchObject({ provider: 'hetzner', connected: true })
      expect(connected.stdout + connected.stderr).not.toContain(hz.token)

      const regions = await cli(['regions', 'hetzner', '--json'])
      expect((regions.json().regions as { id: string }[]).map((r) => r.id)).toEqual(['fsn1', 'nbg1', 'hel1'])
      const sizes = await cli(['sizes', 'hetzner', '--region', 'fsn1'])
      expect(sizes.stdout).toMatch(/cx22\s+2\s+4096 MB\s+40 GB\s+4\.51 EUR/)
      expect((await cli(['sizes', 'nimbus'])).code).toBe(2)

      expect((await cli(['provision', '--provider', 'hetzner', '--name', 'cloud-x', '--region', 'fsn1', '--size', 'cx22', '--allow-ssh-inbound', 'anywhere'])).code).toBe(2)
      // --probe: the Agent port opens to the Platform's address only, and the node gives its address, which the Platform probes
      const prv = await cli(['provision', '--provider', 'hetzner', '--name', 'cloud-e2e', '--region', 'fsn1', '--size', 'cx22', '--probe', '--json'])
      expect(prv.code).toBe(0)
      const id = prv.json().id as string
      expect(prv.json()).toMatchObject({ name: 'cloud-e2e', state: 'booting' })
      // the machine got our binary's URL and the Platform's listener to pin
      expect(hz.book.created[0]!.userData).toContain(`MUSTER_BINARY_URL='${serve.url}/api/v1/cloud/binary'`)
      expect(prv.json().inbound).toEqual({ agentFrom: '127.0.0.1/32', sshFrom: null })
      expect(hz.firewalls.map((f) => f.rules)).toEqual([[{ direction: 'in', protocol: 'tcp', port: '7381', source_ips: ['127.0.0.1/32'], description: 'muster Agent, from the Platform only' }]])

      const ready = await waitFor(async () => {
        const r = (await cli(['provisions', id, '--json'])).json()
        return r.state === 'ready' ? r : null
      }, { timeoutMs: 60_000, intervalMs: 300, what: `ready (machine log: ${[...machines.values()].map((m) => m.log()).join('\n')})` })
      expect(ready).toMatchObject({ node: { name: 'cloud-e2e', state: 'ready' }, machineStatus: 'running' })
      expect((await machines.values().next().value!.booted).code).toBe(0)
      const nodes = JSON.parse((await runMuster(['nodes', 'list', '--json'], { env })).stdout) as { nodes: { name: string; state: string }[] }
      expect(nodes.nodes.find((n) => n.name === 'cloud-e2e')?.state).toBe('ready')
      const status = await cli(['status', '--json'])
      expect(status.json()).toMatchObject({ provisioning: { available: true }, machines: { total: 1, ready: 1, starting: 0 } })
      expect((await cli(['provisions'])).stdout).toMatch(new RegExp(`${id}\\s+cloud-e2e\\s+hetzner\\s+ready`))

      // scale-out consent from the CLI: off by default, needs what to order, then on, then off
      expect((await cli(['scaling', '--json'])).json()).toMatchObject({ enabled: false, maxMachines: 1, cooldownMinutes: 15 })
      expect((await cli(['scaling', '--enable', '--disable'])).code).toBe(2)
      expect((await cli(['scaling', '--max-machines', '0'])).code).toBe(2)
      const unsaid = await cli(['scaling', '--enable'])
      expect(unsaid.code).toBe(1)
      expect(unsaid.stderr).toContain('give provider, region and size')
      const on = await cli(['scaling', '--enable', '--provider', 'hetzner', '--region', 'fsn1', '--size', 'cx22', '--max-machines', '2', '--cooldown-minutes', '5', '--json'])
      expect(on.json()).toMatchObject({ enabled: true, provider: 'hetzner', region: 'fsn1', size: 'cx22', maxMachines: 2, cooldownMinutes: 5 })
      expect((await cli(['scaling', '--disable'])).stdout).toContain('scale-out: off')

      const inUse = await cli(['disconnect', 'hetzner'])
      expect(inUse.code).toBe(1)
      expect(inUse.stderr).toContain('still exist')
      const released = await cli(['release', id, '--json'])
      expect(released.code).toBe(0)
      expect(released.json()).toMatchObject({ state: 'released' })
      expect(hz.book.deleted).toEqual([hz.book.created[0]!.id])
      const after = JSON.parse((await runMuster(['nodes', 'list', '--json'], { env })).stdout) as { nodes: { name: string }[] }
      expect(after.nodes.map((n) => n.name)).not.toContain('cloud-e2e')
      expect((await cli(['disconnect', 'hetzner'])).code).toBe(0)
      expect(serve.log()).not.toContain(hz.token)
      expect(serve.log()).toContain(`cloud: ${id} cloud-e2e is ready`)
    } finally {
      await Promise.all([...machines.values()].map((m) => m.stop()))
    }
  })
})
