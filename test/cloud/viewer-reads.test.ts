// A viewer's reads never turn into provider calls (docs/cloud.md): reading
// the provisions used to reconcile them first, asking the provider about every
// starting machine, so a viewer in a loop made the Platform hammer the cloud
// account (and spend its rate limit). Now a reader who may not manage machines
// is shown the last reconcile (the timer's), regions and sizes are answered
// from memory for a while, and an operator's read still moves provisions on.
import { expect, test } from 'bun:test'
import { cloudOf } from '../../src/cloud/service.ts'
import { startHetznerFake } from '../fakes/hetzner.ts'
import { startListenerPlatform } from '../helpers/node-side.ts'

const BINARY = { url: 'https://releases.example/muster-0.1.0-linux-x64', sha256: 'ab'.repeat(32) }

test("a viewer reading provisions, regions and sizes in a loop makes no provider call; an operator's read does", { timeout: 60_000 }, async () => {
  await using hz = startHetznerFake()
  // The timer's own reconcile is far off: every provider call in this test is one a read made.
  const saved = process.env.MUSTER_CLOUD_RECONCILE_MS
  process.env.MUSTER_CLOUD_RECONCILE_MS = String(3_600_000)
  await using p = await startListenerPlatform().finally(() => (saved === undefined ? delete process.env.MUSTER_CLOUD_RECONCILE_MS : (process.env.MUSTER_CLOUD_RECONCILE_MS = saved)))
  const cloud = cloudOf(p.platform)
  cloud.endpoints.hetzner = hz.url
  cloud.binary = BINARY
  await p.client.cloud.connect('hetzner', hz.token)
  const prv = await p.client.cloud.provision({ provider: 'hetzner', name: 'cloud-1', region: 'fsn1', size: 'cx22' })
  expect(prv.state).toBe('booting') // starting: a reconcile would ask the provider about it

  const viewer = p.clientWith((await p.platform.auth.mintApiToken({ name: 'watcher', role: 'viewer' })).token)
  await viewer.cloud.regions('hetzner')
  await viewer.cloud.sizes('hetzner', 'fsn1')
  const before = hz.calls.length
  for (let i = 0; i < 30; i++) {
    const [list, one] = await Promise.all([viewer.cloud.provisions(), viewer.cloud.provisionInfo(prv.id), viewer.cloud.regions('hetzner'), viewer.cloud.sizes('hetzner', 'fsn1')])
    expect(list.provisions.map((x) => x.id)).toEqual([prv.id])
    expect(one.state).toBe('booting')
  }
  expect(hz.calls.slice(before)).toEqual([])

  // The operator's read moves the provisions on, asking the provider.
  await p.client.cloud.provisions()
  expect(hz.calls.length).toBeGreaterThan(before)
})
