// The first-boot token attack through dist/muster: a Platform provisions a
// Hetzner machine (closed: a firewall with no inbound rule attached at its
// create), releases it while it boots, and then someone who copied the user
// data runs `muster worker join` with its token. The Platform refuses it.
import { describe, expect, test } from 'bun:test'
import { freePort } from '../../src/addresses.ts'
import { runMuster, startServe } from '../helpers/binary.ts'
import { tmpDir } from '../helpers/tmp.ts'
import { readFirstBoot } from '../fakes/first-boot.ts'
import { startHetznerFake } from '../fakes/hetzner.ts'

describe('the first-boot token of a released machine, through dist/muster', () => {
  test('released while booting: `worker join` with the token from its user data is refused', { timeout: 120_000 }, async () => {
    using dir = tmpDir('muster-cloud-release-')
    await using hz = startHetznerFake()
    hz.book.bootMs = 3_600_000 // it never gets to run its first boot
    await using serve = await startServe(`${dir.path}/platform`, ['--enrollment-port', '0', '--enrollment-address', '127.0.0.1'], { MUSTER_CLOUD_HETZNER_URL: hz.url, MUSTER_CLOUD_RECONCILE_MS: '300' })
    const { token: apiToken } = JSON.parse((await runMuster(['admin', 'api-token', '--data-dir', `${dir.path}/platform`, '--json'])).stdout) as { token: string }
    const env = { MUSTER_URL: serve.url, MUSTER_TOKEN: apiToken }
    const cli = (args: string[], stdin?: string) => runMuster(['cloud', ...args], { env, stdin })
    expect((await cli(['connect', '--provider', 'hetzner'], `${hz.token}\n`)).code).toBe(0)
    const prv = JSON.parse((await cli(['provision', '--provider', 'hetzner', '--name', 'cloud-gone', '--region', 'fsn1', '--size', 'cx22', '--json'])).stdout) as { id: string; state: string }
    expect(prv.state).toBe('booting')
    // closed from its create: the server carries a firewall with no inbound rule
    expect(hz.firewalls).toEqual([{ id: expect.any(Number), name: 'muster-closed', labels: { 'managed-by': 'muster' }, rules: [] }])
    expect(hz.book.created[0]!.extra.firewalls).toEqual([hz.firewalls[0]!.id])
    const boot = readFirstBoot(hz.book.created[0]!.userData)

    expect((await cli(['release', prv.id])).code).toBe(0)
    const join = await runMuster(
      ['worker', 'join', '--platform-url', boot.env.MUSTER_PLATFORM_URL!, '--node-id', 'cloud-gone', '--platform-fingerprint', boot.env.MUSTER_PLATFORM_FINGERPRINT!, '--data-dir', `${dir.path}/thief`, '--heartbeat-only', '--port', String(await freePort())],
      { stdin: `${boot.token}\n` },
    )
    expect(join.code).not.toBe(0)
    expect(join.stdout + join.stderr).toMatch(/refused|revoked|used|expired/i)
    const nodes = JSON.parse((await runMuster(['nodes', 'list', '--json'], { env })).stdout) as { nodes: { name: string }[]; pendingEnrollments: unknown[] }
    expect(nodes.nodes.map((n) => n.name)).not.toContain('cloud-gone')
    expect(nodes.pendingEnrollments).toEqual([])
  })
})
