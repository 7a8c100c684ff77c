// Automatic scale-out on a moved clock: off by default; a shortfall held two
// minutes requests one machine; never while one is starting, never past the
// maximum, never inside the cooldown; the request id comes from the cooldown
// window and is recorded before the provider is called.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { requestIdFor } from '../../src/cloud/autoscale.ts'
import { cloudOf } from '../../src/cloud/service.ts'
import { createClient } from '../../src/client/index.ts'
import { updateScaling } from '../../src/store/cloud-scaling.ts'
import { VERSION } from '../../src/version.ts'
import { startHetznerFake } from '../fakes/hetzner.ts'
import { readFirstBoot } from '../fakes/first-boot.ts'
import { enrollRaw, newCert } from '../helpers/certs.ts'
import { startListenerPlatform, type ListenerPlatform } from '../helpers/node-side.ts'

const saved = process.env.MUSTER_CLOUD_AUTOSCALE_MS
beforeAll(() => void (process.env.MUSTER_CLOUD_AUTOSCALE_MS = '3600000')) // only the test's own ticks decide
afterAll(() => void (saved === undefined ? delete process.env.MUSTER_CLOUD_AUTOSCALE_MS : (process.env.MUSTER_CLOUD_AUTOSCALE_MS = saved)))

const nodes: ReturnType<typeof createClient>[] = []

async function join(p: ListenerPlatform, name: string, token: string, machineId?: string) {
  const r = await enrollRaw(p.url, { token, nodeId: name, certPem: (await newCert(name)).certPem, version: VERSION, ...(machineId ? { machineId } : {}) })
  expect(r.status).toBe(200)
  const { credential } = (await r.json()) as { credential: string }
  nodes.push(createClient({ url: p.url, token: credential }))
  await beat(p)
}

/** Moves the clock; the nodes heartbeat at the new time and placement runs again, as they would have meanwhile. */
async function beat(p: ListenerPlatform, ms = 0) {
  p.advance(ms)
  for (const n of nodes) await n.nodes.register({ version: VERSION, capacity: { cpuMillis: 1000, memoryMB: 4096 } })
  await p.platform.projects.reconcile()
}

describe('automatic scale-out', () => {
  test('consent, hold, one at a time, cooldown, maximum, and a window id that cannot order twice', async () => {
    await using hz = startHetznerFake()
    hz.book.bootMs = 60 * 60_000 // the machines stay "booting" however slow the machine running the test is
    await using p = await startListenerPlatform()
    nodes.length = 0
    const cloud = cloudOf(p.platform)
    cloud.endpoints.hetzner = hz.url
    cloud.binary = { url: 'https://releases.example/muster', sha256: 'cd'.repeat(32) }
    const tick = () => cloud.autoscaler.tick()
    // what the Platform had recorded at the moment the provider was asked
    const seenAtCreate: unknown[] = []
    hz.book.onCreate = (m) =>
      seenAtCreate.push(p.platform.store.get('SELECT p.state, s.last_request_at IS NOT NULL AS stamped FROM cloud_provisions p, cloud_scaling s WHERE p.request_id = ?1', m.labels['muster-request']!))
    await p.client.cloud.connect('hetzner', hz.token)
    await join(p, 'base-1', (await p.client.nodes.createEnrollment({ nodeId: 'base-1' })).token)
    await p.client.projects.deploy({ name: 'web', command: ['sleep', '600'], replicas: 3, cpu: 400, memory: 64 })
    expect((await p.client.projects.shortfall()).total).toBe(1)

    // 1. consent is off by default: a lasting shortfall orders nothing
    expect(await p.client.cloud.scaling()).toMatchObject({ enabled: false, maxMachines: 1, cooldownMinutes: 15 })
    expect(await tick()).toEqual({ action: 'none', why: 'disabled' })
    await beat(p, 10 * 60_000)
    expect(await tick()).toEqual({ action: 'none', why: 'disabled' })
    await expect(p.client.cloud.setScaling({ enabled: true })).rejects.toMatchObject({ code: 'invalid-request', detail: { field: 'provider' } })
    const viewer = p.clientWith((await p.platform.auth.mintApiToken({ name: 'v', role: 'viewer' })).token)
    await expect(viewer.cloud.setScaling({ enabled: true })).rejects.toMatchObject({ code: 'forbidden' })
    const on = await p.client.cloud.setScaling({ enabled: true, provider: 'hetzner', region: 'fsn1', size: 'cx22', maxMachines: 2, cooldownMinutes: 10 })
    expect(on).toMatchObject({ enabled: true, maxMachines: 2, cooldownMinutes: 10, provider: 'hetzner', lastRequestAt: null })

    // 2. held for two minutes, then one machine — recorded before the provider was called
    expect(await tick()).toEqual({ action: 'none', why: 'holding' })
    await beat(p, 119_000)
    expect(await tick()).toEqual({ action: 'none', why: 'holding' })
    expect(hz.book.created).toHaveLength(0)
    await beat(p, 2_000)
    const first = await tick()
    const window = requestIdFor(p.platform.now(), 10)
    expect(first).toEqual({ action: 'requested', provisionId: expect.stringMatching(/^prv-/), requestId: window.requestId })
    expect(hz.book.created.map((m) => [m.name, m.labels['muster-request']])).toEqual([[window.name, window.requestId]])
    expect(await Promise.all(seenAtCreate)).toEqual([{ state: 'creating', stamped: 1 }])
    const prv = await p.client.cloud.provisionInfo((first as { provisionId: string }).provisionId)
    expect(prv).toMatchObject({ origin: 'autoscale', requestedBy: 'autoscaler', state: 'booting', name: window.name })

    // 3. never while it is starting, however long the shortfall lasts
    await beat(p, 15 * 60_000)
    expect(await tick()).toEqual({ action: 'none', why: 'machine-starting' })

    // 4. a restart that lost the cooldown time still cannot order twice in one window
    cloud.provisioner.timeoutMs = 60_000 // it fails now, so nothing is starting
    await cloud.provisioner.reconcile()
    expect((await p.client.cloud.provisionInfo(prv.id)).state).toBe('failed')
    cloud.provisioner.timeoutMs = 20 * 60_000
    await beat(p, -15 * 60_000)
    await updateScaling(p.platform.store, { last_request_at: null })
    expect(await tick()).toEqual({ action: 'none', why: 'already-requested' })
    expect(hz.book.created).toHaveLength(1)

    // 5. inside the cooldown nothing; after it, the second machine (the failed one still exists and counts)
    await updateScaling(p.platform.store, { last_request_at: p.platform.now() })
    await beat(p, 9 * 60_000)
    expect(await tick()).toEqual({ action: 'none', why: 'cooldown' })
    await beat(p, 60_000)
    const second = await tick()
    expect(second).toMatchObject({ action: 'requested' })
    expect(hz.book.created).toHaveLength(2)
    const boot = readFirstBoot(hz.book.created[1]!.userData)
    await join(p, boot.env.MUSTER_NODE_ID!, boot.token!, hz.book.created[1]!.id)
    await cloud.provisioner.reconcile()
    expect((await p.client.cloud.provisionInfo((second as { provisionId: string }).provisionId)).state).toBe('ready')

    // 6. capacity arrived: no shortfall, nothing ordered; a new shortfall meets the maximum (2 machines exist)
    expect((await p.client.projects.shortfall()).total).toBe(0)
    expect(await tick()).toEqual({ action: 'none', why: 'no-shortfall' })
    await p.client.projects.deploy({ name: 'more', command: ['sleep', '600'], replicas: 4, cpu: 400, memory: 64 })
    await beat(p, 60 * 60_000)
    expect(await tick()).toEqual({ action: 'none', why: 'holding' })
    await beat(p, 3 * 60_000)
    expect(await tick()).toEqual({ action: 'none', why: 'at-max' })
    expect(hz.book.created).toHaveLength(2)

    // 7. releasing frees a slot; disconnecting withdraws consent
    await p.client.cloud.release(prv.id)
    expect(await tick()).toMatchObject({ action: 'requested' })
    expect(hz.book.created).toHaveLength(3)
    await p.client.cloud.setScaling({ enabled: false })
    await beat(p, 60 * 60_000)
    expect(await tick()).toEqual({ action: 'none', why: 'disabled' })
    await p.client.cloud.setScaling({ enabled: true })
    for (const x of (await p.client.cloud.provisions()).provisions) if (x.state !== 'released') await p.client.cloud.release(x.id)
    await p.client.cloud.disconnect('hetzner')
    expect((await p.client.cloud.scaling()).enabled).toBe(false)
  })

  test('the request id is one per cooldown window', () => {
    const t = Date.UTC(2026, 0, 1, 12, 0, 0)
    expect(requestIdFor(t, 15)).toEqual(requestIdFor(t + 14 * 60_000, 15))
    expect(requestIdFor(t, 15).requestId).not.toBe(requestIdFor(t + 15 * 60_000, 15).requestId)
    expect(requestIdFor(t, 15).name).toMatch(/^[a-z0-9][a-z0-9-]{0,62}$/)
  })
})
