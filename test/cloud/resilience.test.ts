// How provisioning behaves when the provider behaves like a real one: the
// first-boot data kept sealed and sent again byte for byte; a machine not yet
// shown after its create is still coming for 3 minutes; a failed asynchronous
// create is the reason; throttling waited out as the provider asks (and
// reported as throttling when it asks too much); Hetzner's uniqueness_error
// answered by adopting; a failed Azure create; what a machine lets in.
import { describe, expect, test } from 'bun:test'
import { HetznerProvider } from '../../src/cloud/providers/hetzner.ts'
import { cloudOf } from '../../src/cloud/service.ts'
import { startAzureFake } from '../fakes/azure.ts'
import { readFirstBoot } from '../fakes/first-boot.ts'
import { startGcpFake } from '../fakes/gcp.ts'
import { startHetznerFake } from '../fakes/hetzner.ts'
import { startListenerPlatform } from '../helpers/node-side.ts'
import { onEngine } from '../helpers/platform.ts'
import { waitFor } from '../helpers/tmp.ts'
import { ENGINES } from '../helpers/postgres.ts'
import { FAST_RETRY, hz } from './_ctx.ts'
import { SETUPS } from './_setups.ts'
import type { ProviderName } from '../../src/wire/cloud.ts'

async function setup(provider: ProviderName) {
  const p = await startListenerPlatform()
  const cloud = cloudOf(p.platform)
  cloud.binary = { url: 'https://releases.example/muster', sha256: 'ef'.repeat(32) }
  cloud.retry = FAST_RETRY
  const s = await SETUPS[provider](cloud.endpoints)
  await p.client.cloud.connect(provider, s.credentials)
  return {
    p,
    cloud,
    fake: s.fake,
    s,
    async [Symbol.asyncDispose]() {
      await p.close()
      await s.fake.stop()
    },
  }
}

const info = (t: Awaited<ReturnType<typeof setup>>, id: string) => t.p.client.cloud.provisionInfo(id)

describe.each(ENGINES)('on %s', (engine) => {
  onEngine(engine)

  describe('provisioning against real-world providers', () => {
    test('aws: an attempt that failed outright is retried later with the same first-boot data, so EC2 answers the first instance', async () => {
      await using t = await setup('aws')
      t.fake.book.hiddenMs = 60_000 // the provider does not show it for a long while
      t.fake.loseCreates(FAST_RETRY.attempts) // every send of the first attempt loses its answer
      const prv = await t.p.client.cloud.provision({ provider: 'aws', name: 'aws-r1', region: 'eu-central-1', size: 't3.small' })
      expect(prv).toMatchObject({ state: 'creating', reason: expect.stringContaining('will retry') })
      // kept sealed meanwhile; at AWS it holds no token at all (the machine joins by its identity document)
      const boot = readFirstBoot(t.fake.book.created[0]!.userData)
      expect(boot.token).toBeUndefined()
      const sealed = (await t.p.platform.store.get<{ first_boot: Uint8Array }>('SELECT first_boot FROM cloud_provisions WHERE id = ?1', prv.id))!.first_boot
      expect(sealed.length).toBeGreaterThan(100)
      expect(Buffer.from(sealed).toString('latin1')).not.toContain('MUSTER_NODE_ID')
      await t.cloud.provisioner.reconcile()
      const after = await info(t, prv.id)
      expect(after).toMatchObject({ state: expect.stringMatching(/^(booting|enrolling)$/), machineId: `eu-central-1/${t.fake.book.created[0]!.id}` })
      expect(t.fake.book.created).toHaveLength(1)
      expect(new Set(t.fake.createBodies).size).toBe(1)
      // EC2 still does not show it: still coming, not failed
      expect(await info(t, prv.id)).toMatchObject({ state: after.state, reason: expect.stringContaining('still coming') })
    })

    test('gcp: a machine not shown after its create is still coming for 3 minutes, then failed', async () => {
      await using t = await setup('gcp')
      t.fake.book.hiddenMs = 24 * 3600_000
      const prv = await t.p.client.cloud.provision({ provider: 'gcp', name: 'gcp-r1', region: 'europe-west1-b', size: 'e2-medium' })
      expect(prv.state).toBe('booting')
      expect(await info(t, prv.id)).toMatchObject({ state: 'booting', reason: `gcp does not show machine europe-west1-b/gcp-r1 yet; still coming` })
      t.p.advance(2 * 60_000 + 50_000)
      expect((await info(t, prv.id)).state).toBe('booting')
      t.p.advance(20_000)
      expect(await info(t, prv.id)).toMatchObject({ state: 'failed', reason: 'the machine europe-west1-b/gcp-r1 no longer exists at gcp' })
    })

    test('gcp: the insert Operation’s error is the provision’s reason', async () => {
      await using t = await setup('gcp')
      ;(t.fake as Awaited<ReturnType<typeof startGcpFake>>).failNextInsert = { code: 'ZONE_RESOURCE_POOL_EXHAUSTED', message: "The zone 'projects/muster-test-4711/zones/europe-west1-b' does not have enough resources available to fulfill the request." }
      const prv = await t.p.client.cloud.provision({ provider: 'gcp', name: 'gcp-r2', region: 'europe-west1-b', size: 'e2-medium' })
      expect(prv.state).toBe('booting')
      await waitFor(async () => (await info(t, prv.id)).state === 'failed', { what: 'the provision failed' })
      expect(await info(t, prv.id)).toMatchObject({ state: 'failed', reason: "gcp could not create the machine: ZONE_RESOURCE_POOL_EXHAUSTED: The zone 'projects/muster-test-4711/zones/europe-west1-b' does not have enough resources available to fulfill the request." })
      expect((await t.p.client.nodes.list()).pendingEnrollments).toEqual([])
    })

    test('azure: a VM whose create fails asynchronously fails the provision', async () => {
      await using t = await setup('azure')
      ;(t.fake as ReturnType<typeof startAzureFake>).failNextVm = 'Allocation failed. We do not have sufficient capacity for the requested VM size in this region.'
      const prv = await t.p.client.cloud.provision({ provider: 'azure', name: 'az-r1', region: 'westeurope', size: 'Standard_B2s' })
      expect(await info(t, prv.id)).toMatchObject({ state: 'failed', reason: 'the machine is Failed at azure: AllocationFailed: Allocation failed. We do not have sufficient capacity for the requested VM size in this region.' })
    })

    test('hetzner: throttled creates and reads wait for RateLimit-Reset; asked to wait too long, the answer is cloud-throttled', async () => {
      await using t = await setup('hetzner')
      const f = t.fake as ReturnType<typeof startHetznerFake>
      f.throttle(1, (r, u) => r.method === 'POST' && u.pathname === '/v1/servers', 1)
      f.throttle(1, (_r, u) => u.pathname === '/v1/server_types', 1)
      expect((await t.p.client.cloud.sizes('hetzner', 'fsn1')).sizes.map((x) => x.id)).toEqual(['cx22', 'cx32'])
      const prv = await t.p.client.cloud.provision({ provider: 'hetzner', name: 'hz-r1', region: 'fsn1', size: 'cx22' })
      expect(prv.state).toBe('booting')
      const posts = f.log.filter((c) => c.method === 'POST' && c.path === '/v1/servers')
      expect(posts).toHaveLength(2)
      // the reset is a whole second away at most: the second POST came after it, not at once
      const reset = Math.ceil(posts[0]!.at / 1000) * 1000 + 1000
      expect(posts[1]!.at).toBeGreaterThanOrEqual(reset)
      expect(t.fake.book.created).toHaveLength(1)
      f.throttle(1, (_r, u) => u.pathname === '/v1/locations', 3600)
      await expect(t.p.client.cloud.regions('hetzner')).rejects.toMatchObject({ code: 'cloud-throttled', message: expect.stringContaining('rate_limit_exceeded') })
    })

    test('digitalocean: a throttled droplet create is sent again after ratelimit-reset (only a 429 makes it safe to resend)', async () => {
      await using t = await setup('digitalocean')
      t.fake.throttle(1, (r, u) => r.method === 'POST' && u.pathname === '/v2/droplets', 1)
      const prv = await t.p.client.cloud.provision({ provider: 'digitalocean', name: 'do-r1', region: 'ams3', size: 's-1vcpu-1gb' })
      expect(prv.state).toBe('booting')
      expect(t.fake.calls.filter((c) => c === 'POST /v2/droplets')).toHaveLength(2)
      expect(t.fake.book.created).toHaveLength(1)
    })

    test('a provider that asks for a wait longer than muster waits in one call is left alone until then', async () => {
      await using t = await setup('hetzner')
      t.fake.throttle(1, (r, u) => r.method === 'POST' && u.pathname === '/v1/servers', 120)
      const prv = await t.p.client.cloud.provision({ provider: 'hetzner', name: 'hz-q', region: 'fsn1', size: 'cx22' })
      expect(prv).toMatchObject({ state: 'creating', reason: expect.stringMatching(/^will retry: hetzner is throttling requests \(429 rate_limit_exceeded: .*\); it asks to wait 1[12]\ds/) })
      const before = t.fake.calls.length
      await t.cloud.provisioner.reconcile()
      await t.cloud.provisioner.reconcile()
      expect(t.fake.calls.length).toBe(before)
      expect(t.fake.book.created).toHaveLength(0)
    })

    describe('what a created machine lets in', () => {
      test('nothing by default; --probe opens the Agent port to the Platform only; --allow-ssh-inbound opens 22 to its CIDR', async () => {
        await using t = await setup('hetzner')
        const f = t.fake as ReturnType<typeof startHetznerFake>
        const closed = await t.p.client.cloud.provision({ provider: 'hetzner', name: 'hz-closed', region: 'fsn1', size: 'cx22' })
        expect(closed.inbound).toEqual({ agentFrom: null, sshFrom: null })
        // closed from its create on: a firewall with no inbound rule (sshd listens until first boot stops it)
        expect(f.firewalls).toEqual([{ id: expect.any(Number), name: 'muster-closed', labels: { 'managed-by': 'muster' }, rules: [] }])
        expect(t.fake.book.created[0]!.extra.firewalls).toEqual([f.firewalls[0]!.id])
        expect(readFirstBoot(t.fake.book.created[0]!.userData).env).toMatchObject({ MUSTER_PROBE: 'no', MUSTER_SSH: 'no' })
        await expect(t.p.client.cloud.provision({ provider: 'hetzner', name: 'hz-bad', region: 'fsn1', size: 'cx22', allowSshInbound: 'everyone' })).rejects.toMatchObject({ code: 'invalid-request', detail: { field: 'allowSshInbound' } })
        const open = await t.p.client.cloud.provision({ provider: 'hetzner', name: 'hz-open', region: 'fsn1', size: 'cx22', probe: true, allowSshInbound: '192.0.2.0/24' })
        // the Platform's address: its enrollment listener's (127.0.0.1 here)
        expect(open.inbound).toEqual({ agentFrom: '127.0.0.1/32', sshFrom: '192.0.2.0/24' })
        expect(f.firewalls).toHaveLength(2)
        expect(f.firewalls[1]!.rules).toEqual([
          { direction: 'in', protocol: 'tcp', port: '7381', source_ips: ['127.0.0.1/32'], description: 'muster Agent, from the Platform only' },
          { direction: 'in', protocol: 'tcp', port: '22', source_ips: ['192.0.2.0/24'], description: 'ssh (muster --allow-ssh-inbound)' },
        ])
        expect(t.fake.book.created[1]!.extra.firewalls).toEqual([f.firewalls[1]!.id])
        expect(readFirstBoot(t.fake.book.created[1]!.userData).env).toMatchObject({ MUSTER_PROBE: 'yes', MUSTER_SSH: 'yes' })
      })

      test('azure --probe: the public IP muster made is the address the node gives', async () => {
        await using t = await setup('azure')
        const f = t.fake as ReturnType<typeof startAzureFake>
        await t.p.client.cloud.provision({ provider: 'azure', name: 'az-probe', region: 'westeurope', size: 'Standard_B2s', probe: true })
        const ip = [...f.resources.values()].find((r) => r.type === 'publicIPAddresses')!.body.properties!.ipAddress
        expect(readFirstBoot(f.book.created[0]!.userData).env).toMatchObject({ MUSTER_PROBE: 'yes', MUSTER_ADDRESS: ip })
      })
    })
  })
})

describe('hetzner without a Platform', () => {
  test('hetzner: a uniqueness_error is answered by adopting the same-named server that carries this request id; another’s is refused', async () => {
    await using f = startHetznerFake()
    const p = new HetznerProvider({ token: f.token }, hz(f.url))
    const req = { name: 'hz-u', region: 'fsn1', size: 'cx22', userData: '#cloud-config\n', requestId: 'prv-uuuuuuuuuuuu', role: 'general' as const, inbound: { agentFrom: null, sshFrom: null } }
    // two attempts at once (two Platforms, or a retry racing a slow first): both look, both create
    const [a, b] = await Promise.all([p.createMachine(req), p.createMachine(req)])
    expect(a.id).toBe(b.id)
    expect(f.book.created).toHaveLength(1)
    expect(f.calls.filter((c) => c === 'POST /v1/servers')).toHaveLength(2)
    await expect(p.createMachine({ ...req, requestId: 'prv-otherrequest' })).rejects.toMatchObject({ code: 'cloud-provider-error', message: expect.stringContaining('muster did not create for this request') })
  })
})
