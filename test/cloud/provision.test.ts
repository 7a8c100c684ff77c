// Provisioning in-process against the Hetzner fake: the first-boot data, the
// states creating → booting → enrolling → ready, the 20-minute timeout on a
// moved clock, a machine that vanishes, a refusal, a resumed create that
// adopts instead of ordering twice, and release.
import { describe, expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { resolve } from 'node:path'
import { CLOSED } from '../../src/cloud/provider.ts'
import { cloudOf } from '../../src/cloud/service.ts'
import { createClient } from '../../src/client/index.ts'
import type { MusterError } from '../../src/errors.ts'
import { VERSION } from '../../src/version.ts'
import { startHetznerFake } from '../fakes/hetzner.ts'
import { readFirstBoot } from '../fakes/first-boot.ts'
import { enrollRaw, newCert } from '../helpers/certs.ts'
import { startListenerPlatform } from '../helpers/node-side.ts'
import { onEngine, startPlatform } from '../helpers/platform.ts'
import { ENGINES } from '../helpers/postgres.ts'
import { waitFor } from '../helpers/tmp.ts'

const BINARY = { url: 'https://releases.example/muster-0.1.0-linux-x64', sha256: 'ab'.repeat(32) }

async function setup() {
  const hz = startHetznerFake()
  const p = await startListenerPlatform()
  const cloud = cloudOf(p.platform)
  cloud.endpoints.hetzner = hz.url
  cloud.binary = BINARY
  await p.client.cloud.connect('hetzner', hz.token)
  return {
    hz,
    p,
    cloud,
    async [Symbol.asyncDispose]() {
      await p.close()
      await hz.stop()
    },
  }
}

/** What the machine would do with its first-boot data: enroll with the token, then heartbeat. */
async function actAsMachine(url: string, userData: string, machineId: string) {
  const boot = readFirstBoot(userData)
  const r = await enrollRaw(url, { token: boot.token, machineId, nodeId: boot.env.MUSTER_NODE_ID, certPem: (await newCert(boot.env.MUSTER_NODE_ID)).certPem, version: VERSION })
  expect(r.status).toBe(200)
  const { credential } = (await r.json()) as { credential: string }
  await createClient({ url, token: credential }).nodes.register({ version: VERSION, capacity: { cpuMillis: 2000, memoryMB: 4096 } })
  return boot
}

describe.each(ENGINES)('on %s', (engine) => {
  onEngine(engine)

  describe('provisioning', () => {
    test('first-boot data: root-only token file, pinned join, the installer, no provider credential', async () => {
      await using s = await setup()
      const prv = await s.p.client.cloud.provision({ provider: 'hetzner', name: 'cloud-1', region: 'fsn1', size: 'cx22' })
      expect(prv).toMatchObject({ name: 'cloud-1', state: 'booting', provider: 'hetzner', role: 'general', origin: 'operator', requestedBy: `token:${s.p.token.slice(4, 20)}`, machineStatus: 'initializing' })
      const sent = s.hz.book.created[0]!
      expect(sent.labels).toEqual({ 'managed-by': 'muster', 'muster-request': prv.id, 'muster-role': 'general' })
      const boot = readFirstBoot(sent.userData)
      const token = boot.files.get('/root/muster-first-boot/enrollment-token')!
      expect(token).toMatchObject({ owner: 'root:root', permissions: '0600' })
      expect(boot.token).toMatch(/^mjt_[a-z2-7]{16}\.[A-Za-z0-9_-]{43}$/)
      expect(boot.env).toEqual({
        MUSTER_PROVIDER: 'hetzner',
        MUSTER_NODE_ID: 'cloud-1',
        MUSTER_ROLE: 'general',
        MUSTER_PLATFORM_URL: s.p.enrollUrl,
        MUSTER_PLATFORM_FINGERPRINT: s.p.fingerprint,
        MUSTER_BINARY_URL: BINARY.url,
        MUSTER_BINARY_SHA256: BINARY.sha256,
        MUSTER_PROBE: 'no',
        MUSTER_SSH: 'no',
      })
      // install.sh as shipped, less its comment-only lines (outside here-documents): the same program, and it parses
      const installer = boot.files.get('/root/muster-first-boot/install.sh')!.content
      const shipped = readFileSync(resolve(import.meta.dir, '../../install.sh'), 'utf8')
      const code = (t: string) => t.split('\n').filter((l) => !/^\s*#(?!!)/.test(l))
      expect(code(installer)).toEqual(code(shipped))
      expect(installer.split('\n')[0]).toBe(shipped.split('\n')[0])
      expect(installer).toContain('# Installed by install.sh') // a unit's comment, inside a here-document, is kept
      expect(Bun.spawnSync(['sh', '-n'], { stdin: new TextEncoder().encode(installer) }).exitCode).toBe(0)
      const join = boot.files.get('/root/muster-first-boot/join.sh')!.content
      expect(join).toContain('sh ./install.sh --role worker --from "$MUSTER_BINARY_URL" --sha256 "$MUSTER_BINARY_SHA256"')
      expect(join).toMatch(/runuser -u muster -- \/usr\/local\/bin\/muster worker join [^\n]*\\\n[^\n]*--label "role=\$MUSTER_ROLE" \\\n\s+--cloud-identity "\$MUSTER_PROVIDER" "\$@" <"\$TOKEN_FILE"; do\n/)
      // the token comes on stdin from its root-only file, bound to the server the metadata service names
      expect(join).toContain('[ ! -f ./enrollment-token ] || TOKEN_FILE=./enrollment-token')
      // no inbound by default: heartbeat-only unless --probe, and SSH stopped unless --allow-ssh-inbound
      expect(join).toContain('set -- --heartbeat-only\nif [ "$MUSTER_PROBE" = yes ]; then')
      expect(join).toContain('if [ "$MUSTER_SSH" != yes ]; then\n\tsystemctl disable --now ssh.socket ssh.service')
      expect(Bun.spawnSync(['sh', '-n'], { stdin: new TextEncoder().encode(join) }).exitCode).toBe(0)
      // CI installs shellcheck: its absence is a failure, not a skip
      expect(Bun.which('shellcheck')).not.toBeNull()
      const lint = Bun.spawnSync(['shellcheck', '-s', 'sh', '-'], { stdin: new TextEncoder().encode(join) })
      expect(lint.stdout.toString()).toBe('')
      expect(lint.exitCode).toBe(0)
      expect(boot.runcmd).toEqual([['sh', '/root/muster-first-boot/join.sh']])
      // the token is only in its file; no provider credential anywhere
      expect(sent.userData.split(boot.token!).length).toBe(2)
      expect(sent.userData).not.toContain(s.hz.token)
      // the enrollment is pending for that name, and shown nowhere in the provision
      expect((await s.p.client.nodes.list()).pendingEnrollments.map((e) => e.nodeId)).toEqual(['cloud-1'])
      expect(JSON.stringify(await s.p.client.cloud.provisions())).not.toContain(boot.token!.split('.')[1]!)
    })

    test('booting → enrolling → ready from the provider and the registry; disconnect refused until release; release deletes and removes', async () => {
      await using s = await setup()
      const prv = await s.p.client.cloud.provision({ provider: 'hetzner', name: 'cloud-2', region: 'nbg1', size: 'cx32', role: 'build' })
      expect(prv.state).toBe('booting')
      await waitFor(async () => (await s.p.client.cloud.provisionInfo(prv.id)).state === 'enrolling', { what: 'enrolling' })
      expect((await s.p.client.cloud.provisionInfo(prv.id)).address).toMatch(/^203\.0\.113\./)
      const boot = await actAsMachine(s.p.url, s.hz.book.created[0]!.userData, s.hz.book.created[0]!.id)
      expect(boot.env.MUSTER_ROLE).toBe('build')
      const ready = await s.p.client.cloud.provisionInfo(prv.id)
      expect(ready).toMatchObject({ state: 'ready', node: { name: 'cloud-2', state: 'ready' } })
      expect(ready.readyAt).not.toBeNull()
      // the single-use token is spent
      const again = await enrollRaw(s.p.url, { token: boot.token, nodeId: 'cloud-2', certPem: (await newCert('cloud-2')).certPem, version: VERSION })
      expect(again.status).toBe(403)

      await expect(s.p.client.cloud.disconnect('hetzner')).rejects.toMatchObject({ code: 'cloud-in-use' })
      const viewer = s.p.clientWith((await s.p.platform.auth.mintApiToken({ name: 'v', role: 'viewer' })).token)
      await expect(viewer.cloud.release(prv.id)).rejects.toMatchObject({ code: 'forbidden' })
      const released = await s.p.client.cloud.release(prv.id)
      expect(released).toMatchObject({ state: 'released', node: null, reason: `released by token:${s.p.token.slice(4, 20)}` })
      expect(s.hz.book.deleted).toEqual([s.hz.book.created[0]!.id])
      expect((await s.p.client.nodes.list()).nodes.map((n) => n.name)).not.toContain('cloud-2')
      expect((await s.p.client.cloud.release(prv.id)).state).toBe('released')
      expect((await s.p.client.cloud.disconnect('hetzner')).connected).toBe(false)
    })

    test('not ready within 20 minutes is failed (moved clock) and its enrollment revoked', async () => {
      await using s = await setup()
      const prv = await s.p.client.cloud.provision({ provider: 'hetzner', name: 'cloud-3', region: 'fsn1', size: 'cx22' })
      await waitFor(async () => (await s.p.client.cloud.provisionInfo(prv.id)).state === 'enrolling', { what: 'enrolling' })
      s.p.advance(19 * 60_000)
      expect((await s.p.client.cloud.provisionInfo(prv.id)).state).toBe('enrolling')
      s.p.advance(2 * 60_000)
      const failed = await s.p.client.cloud.provisionInfo(prv.id)
      expect(failed).toMatchObject({ state: 'failed', reason: 'not ready within 20 minutes (machine running, node not enrolled)' })
      expect((await s.p.client.nodes.list()).pendingEnrollments).toEqual([])
      // the machine still exists (muster never deletes on its own): it counts until released
      expect((await s.p.client.cloud.status()).machines).toMatchObject({ total: 1, failed: 1 })
    })

    test('a machine deleted behind muster’s back fails the provision; a refused create fails at once', async () => {
      await using s = await setup()
      const prv = await s.p.client.cloud.provision({ provider: 'hetzner', name: 'cloud-4', region: 'fsn1', size: 'cx22' })
      await s.cloud.provisioner.reconcile() // seen at the provider once
      s.hz.book.remove(prv.machineId!)
      await s.cloud.provisioner.reconcile()
      expect(await s.p.client.cloud.provisionInfo(prv.id)).toMatchObject({ state: 'failed', reason: `the machine ${prv.machineId} no longer exists at hetzner` })
      const bad = await s.p.client.cloud.provision({ provider: 'hetzner', name: 'cloud-5', region: 'fsn1', size: 'cx99' })
      expect(bad).toMatchObject({ state: 'failed', machineId: null })
      expect(bad.reason).toContain("hetzner answered 400 invalid_input: invalid input in field 'server_type'")
      expect((await s.p.client.nodes.list()).pendingEnrollments).toEqual([])
      // a failed provision without a machine frees its name
      const retry = await s.p.client.cloud.provision({ provider: 'hetzner', name: 'cloud-5', region: 'fsn1', size: 'cx22' })
      expect(retry.state).toBe('booting')
      await expect(s.p.client.cloud.provision({ provider: 'hetzner', name: 'cloud-5', region: 'fsn1', size: 'cx22' })).rejects.toMatchObject({ code: 'name-taken' })
    })

    test('a create interrupted after the provider answered is adopted on resume, never ordered twice', async () => {
      await using s = await setup()
      const input = { provider: 'hetzner' as const, name: 'cloud-6', region: 'fsn1', size: 'cx22', role: 'general' as const }
      s.hz.book.bootMs = 60_000 // stays initializing: what is checked is the adoption, not how fast the machine boots
      // recorded, then the Platform "crashed" after the provider created the machine but before the answer was stored
      const row = (await s.cloud.provisioner.record(input, 'operator', 'test'))!
      await (await s.cloud.provider('hetzner')).createMachine({ ...input, userData: '#cloud-config\n', requestId: row.request_id, inbound: CLOSED })
      expect(s.hz.book.created).toHaveLength(1)
      await s.cloud.provisioner.reconcile()
      const adopted = await s.p.client.cloud.provisionInfo(row.id)
      expect(adopted).toMatchObject({ state: 'booting', machineId: s.hz.book.created[0]!.id })
      expect(s.hz.book.created).toHaveLength(1)
      // recorded but never sent: the resume creates it, once
      const row2 = (await s.cloud.provisioner.record({ ...input, name: 'cloud-7' }, 'operator', 'test'))!
      await Promise.all([s.cloud.provisioner.reconcile(), s.cloud.provisioner.reconcile()])
      await s.cloud.provisioner.reconcile()
      expect(s.hz.book.created.map((m) => m.name)).toEqual(['cloud-6', 'cloud-7'])
      expect((await s.p.client.cloud.provisionInfo(row2.id)).machineId).toBe(s.hz.book.created[1]!.id)
    })

    test('a slow provider: the request answers creating and the create goes on in the background', async () => {
      await using s = await setup()
      s.cloud.provisioner.answerWithinMs = 0
      // The provider holds the create until the answer is in: the answer cannot race the create.
      const release = s.hz.holdCreates()
      const prv = await s.p.client.cloud.provision({ provider: 'hetzner', name: 'cloud-8', region: 'fsn1', size: 'cx22' })
      expect(prv).toMatchObject({ state: 'creating', machineId: null })
      release()
      await waitFor(async () => (await s.p.client.cloud.provisionInfo(prv.id)).machineId !== null, { what: 'machine id' })
      expect(s.hz.book.created).toHaveLength(1)
    })

    test('refusals before anything is ordered: not connected, no enrollment listener, a taken name', async () => {
      await using hz = startHetznerFake()
      await using plain = await startPlatform({ remoteDispatch: true })
      cloudOf(plain.platform).endpoints.hetzner = hz.url
      cloudOf(plain.platform).binary = BINARY
      await expect(plain.client.cloud.provision({ provider: 'hetzner', name: 'x1', region: 'fsn1', size: 'cx22' })).rejects.toMatchObject({ code: 'cloud-unavailable' })
      await using s = await setup()
      await expect(s.p.client.cloud.provision({ provider: 'digitalocean', name: 'x1', region: 'nyc3', size: 's-1vcpu-1gb' })).rejects.toMatchObject({ code: 'cloud-not-connected' })
      await expect(s.p.client.cloud.provision({ provider: 'hetzner', name: 'local', region: 'fsn1', size: 'cx22' })).rejects.toMatchObject({ code: 'name-taken' })
      await s.p.client.nodes.createEnrollment({ nodeId: 'manual-1' })
      await expect(s.p.client.cloud.provision({ provider: 'hetzner', name: 'manual-1', region: 'fsn1', size: 'cx22' })).rejects.toMatchObject({ code: 'enrollment-pending' })
      await expect(s.p.client.cloud.provision({ provider: 'hetzner', name: 'Bad_Name', region: 'fsn1', size: 'cx22' })).rejects.toMatchObject({ code: 'invalid-request', detail: { field: 'name' } })
      await expect(s.p.client.cloud.provisionInfo('prv-nosuchthing0')).rejects.toMatchObject({ code: 'not-found' })
      expect(hz.book.created).toHaveLength(0)
      expect(s.hz.book.created).toHaveLength(0)
    })

    test('a Platform a real provider\'s machine could never reach (loopback listener, API or binary URL) is refused, naming the flag', async () => {
      await using s = await setup() // the listener on 127.0.0.1: fine while the "provider" is a fake on this machine
      const order = () => s.p.client.cloud.provision({ provider: 'hetzner', name: 'far-1', region: 'fsn1', size: 'cx22' })
      // The provider at its real address: a machine there could never reach 127.0.0.1, yet would be billed.
      s.cloud.endpoints.hetzner = 'https://api.hetzner.example'
      const refused = (await order().catch((e) => e)) as MusterError
      expect(refused.code).toBe('cloud-unavailable')
      expect(refused.message).toBe(`Refusing to provision: the enrollment listener is at ${s.p.enrollUrl}, a loopback address: a machine at hetzner could never reach it, yet would be billed. Start serve with --host ADDR --enrollment-port PORT, ADDR an address those machines reach (or --enrollment-address ADDR).`)
      // autoscaling asks the same question before it orders
      await expect(s.cloud.provisioner.check({ provider: 'hetzner', name: 'far-2', region: 'fsn1', size: 'cx22', role: 'general' })).rejects.toMatchObject({ code: 'cloud-unavailable' })
      expect(s.hz.book.created).toHaveLength(0)
      // With the fake on this machine again, the same request goes through.
      s.cloud.endpoints.hetzner = s.hz.url
      expect((await order()).name).toBe('far-1')
    })
  })
})
