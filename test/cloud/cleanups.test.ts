// What a provision leaves behind when it stops starting (cleanups,
// observed): a failed provision's first-boot token enrolls nothing;
// a released machine whose node still has replicas placed is revoked (its
// credential is refused at once); a ready or failed provision keeps no sealed
// first-boot data; and a first-boot token minted while the provision was
// released meanwhile is revoked before anyone can use it.
import { describe, expect, test } from 'bun:test'
import { cloudOf } from '../../src/cloud/service.ts'
import { VERSION } from '../../src/version.ts'
import { readFirstBoot } from '../fakes/first-boot.ts'
import { enrollRaw, newCert } from '../helpers/certs.ts'
import { startListenerPlatform, type ListenerPlatform } from '../helpers/node-side.ts'
import { waitFor } from '../helpers/tmp.ts'
import { SETUPS } from './_setups.ts'
import { pendingEnrollments } from '../../src/store/join-tokens.ts'

async function hetzner(p: ListenerPlatform) {
  const cloud = cloudOf(p.platform)
  cloud.binary = { url: 'https://releases.example/muster', sha256: 'ef'.repeat(32) }
  const s = await SETUPS.hetzner(cloud.endpoints)
  s.fake.book.bootMs = 0
  await p.client.cloud.connect('hetzner', s.credentials)
  return { cloud, s }
}

const firstBootOf = async (p: ListenerPlatform, id: string) => (await p.platform.store.get<{ first_boot: Uint8Array | null }>('SELECT first_boot FROM cloud_provisions WHERE id = ?1', id))!.first_boot

/** Enrolls as the machine of the provision `name` would: its first-boot token, from the server it is bound to. */
async function enrollFrom(p: ListenerPlatform, name: string, token: string) {
  const row = await p.platform.store.get<{ machine_id: string | null }>('SELECT machine_id FROM cloud_provisions WHERE name = ?1 ORDER BY created_at DESC LIMIT 1', name)
  return enrollRaw(p.url, { token, nodeId: name, certPem: (await newCert(name)).certPem, version: VERSION, ...(row?.machine_id ? { machineId: row.machine_id } : {}) })
}

describe('a provision that stops starting', () => {
  test('failed (not ready in time): its first-boot token enrolls nothing and its sealed first-boot data is gone', async () => {
    await using p = await startListenerPlatform()
    const { cloud, s } = await hetzner(p)
    await using _fake = s.fake
    const prv = await p.client.cloud.provision({ provider: 'hetzner', name: 'slow-1', region: s.region, size: s.size })
    const token = readFirstBoot(s.fake.book.created[0]!.userData).token!
    expect(await firstBootOf(p, prv.id)).not.toBeNull()
    p.advance(cloud.provisioner.timeoutMs + 1000)
    await cloud.provisioner.reconcile()
    expect((await p.client.cloud.provisionInfo(prv.id)).state).toBe('failed')
    expect(await firstBootOf(p, prv.id)).toBeNull()
    // the attack: the machine (or whoever read its user data) enrolls late
    const r = await enrollFrom(p, 'slow-1', token)
    expect(r.status).toBe(403)
    expect((await p.client.nodes.list()).nodes.map((n) => n.name)).not.toContain('slow-1')
  })

  test('failed early (its machine gone): its first-boot token, still within its lifetime, enrolls nothing', async () => {
    await using p = await startListenerPlatform()
    const { cloud, s } = await hetzner(p)
    await using _fake = s.fake
    const prv = await p.client.cloud.provision({ provider: 'hetzner', name: 'gone-1', region: s.region, size: s.size })
    const token = readFirstBoot(s.fake.book.created[0]!.userData).token!
    await waitFor(async () => (await cloud.provisioner.reconcile(), (await p.platform.store.get<{ seen_at: number | null }>('SELECT seen_at FROM cloud_provisions WHERE id = ?1', prv.id))?.seen_at != null), { what: 'the machine seen' })
    // someone deletes the server behind muster's back: the provision fails long before the token would expire
    const machineId = s.fake.book.created[0]!.id
    s.fake.book.remove(machineId)
    await cloud.provisioner.reconcile()
    expect((await p.client.cloud.provisionInfo(prv.id)).state).toBe('failed')
    const r = await enrollRaw(p.url, { token, machineId, nodeId: 'gone-1', certPem: (await newCert('gone-1')).certPem, version: VERSION })
    expect(r.status).toBe(403)
    expect((await p.client.nodes.list()).nodes.map((n) => n.name)).not.toContain('gone-1')
  })

  test('ready: the sealed first-boot data is dropped', async () => {
    await using p = await startListenerPlatform()
    const { cloud, s } = await hetzner(p)
    await using _fake = s.fake
    const prv = await p.client.cloud.provision({ provider: 'hetzner', name: 'fast-1', region: s.region, size: s.size })
    const token = readFirstBoot(s.fake.book.created[0]!.userData).token!
    const enrolled = await enrollFrom(p, 'fast-1', token)
    expect(enrolled.status).toBe(200)
    const { credential } = (await enrolled.json()) as { credential: string }
    await fetch(`${p.url}/api/v1/nodes/register`, { method: 'POST', headers: { authorization: `Bearer ${credential}`, 'content-type': 'application/json' }, body: JSON.stringify({ version: VERSION }) })
    await waitFor(async () => (await cloud.provisioner.reconcile(), (await p.client.cloud.provisionInfo(prv.id)).state === 'ready'), { what: 'the provision ready' })
    expect(await firstBootOf(p, prv.id)).toBeNull()
  })

  test('released while replicas are placed on its node: the node is revoked first (its replicas move away), and its credential is refused at once', async () => {
    await using p = await startListenerPlatform()
    const { s } = await hetzner(p)
    await using _fake = s.fake
    const prv = await p.client.cloud.provision({ provider: 'hetzner', name: 'busy-1', region: s.region, size: s.size })
    const enrolled = await enrollFrom(p, 'busy-1', readFirstBoot(s.fake.book.created[0]!.userData).token!)
    const { credential } = (await enrolled.json()) as { credential: string }
    const beat = () => fetch(`${p.url}/api/v1/nodes/register`, { method: 'POST', headers: { authorization: `Bearer ${credential}`, 'content-type': 'application/json' }, body: JSON.stringify({ version: VERSION, capacity: { cpuMillis: 2000, memoryMB: 2048 } }) })
    expect((await beat()).status).toBe(200)
    await p.client.projects.deploy({ name: 'web', replicas: 1, cpu: 100, memory: 64, command: ['sleep', '60'] })
    await waitFor(async () => (await p.client.projects.show('web')).placements[0]?.node === 'busy-1', { what: 'web placed on busy-1' })
    const released = await p.client.cloud.release(prv.id)
    expect(released.state).toBe('released')
    // revoked first, so its replicas move away and the node can go; whatever is left of it is revoked
    const left = (await p.client.nodes.list()).nodes.find((n) => n.name === 'busy-1')
    expect(left === undefined || left.state === 'revoked').toBe(true)
    const r = await beat()
    expect([401, 403]).toContain(r.status)
    expect((await p.client.projects.show('web')).placements[0]?.node ?? null).not.toBe('busy-1')
  })

  test('released while its first-boot data was being made: the token just minted is revoked, never handed out', async () => {
    await using p = await startListenerPlatform()
    const { cloud, s } = await hetzner(p)
    await using _fake = s.fake
    const input = { provider: 'hetzner' as const, name: 'race-1', region: s.region, size: s.size, role: 'general' as const }
    const row = (await cloud.provisioner.record(input, 'operator', 'test'))!
    // another Platform (or the operator) released it a moment ago
    await p.platform.store.run("UPDATE cloud_provisions SET state = 'released' WHERE id = ?1", row.id)
    const provider = await cloud.provider('hetzner')
    await expect(cloud.provisioner.firstBoot.get(row, provider, p.platform.now() + 600_000)).rejects.toThrow('stopped starting')
    expect(await pendingEnrollments(p.platform.store, p.platform.now(), 'race-1')).toEqual([])
    expect(s.fake.book.created).toEqual([])
  })
})
