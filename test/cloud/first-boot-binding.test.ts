// A provision's sealed first-boot data is bound to that provision:
// a record copied by someone who can write the store onto another provision
// does not open there, so the other machine is never sent the first one's
// single-use enrollment (and name). Through the provisioner, against the Hetzner fake.
import { expect, test } from 'bun:test'
import { cloudOf } from '../../src/cloud/service.ts'
import { startHetznerFake } from '../fakes/hetzner.ts'
import { readFirstBoot } from '../fakes/first-boot.ts'
import { startListenerPlatform } from '../helpers/node-side.ts'

const BINARY = { url: 'https://releases.example/muster-0.1.0-linux-x64', sha256: 'ab'.repeat(32) }

test("a first-boot record copied onto another provision does not open there: that machine never gets the first one's token", async () => {
  const hz = startHetznerFake()
  await using p = await startListenerPlatform()
  try {
    const cloud = cloudOf(p.platform)
    cloud.endpoints.hetzner = hz.url
    cloud.binary = BINARY
    hz.book.bootMs = 60_000 // A stays booting, so its first-boot record is kept
    await p.client.cloud.connect('hetzner', hz.token)
    const a = await p.client.cloud.provision({ provider: 'hetzner', name: 'cloud-a', region: 'fsn1', size: 'cx22' })
    expect(a.state).toBe('booting')
    const sentA = readFirstBoot(hz.book.created[0]!.userData)
    // B recorded, not yet sent; A's sealed record written onto it directly in the store
    const b = (await cloud.provisioner.record({ provider: 'hetzner', name: 'cloud-b', region: 'fsn1', size: 'cx22', role: 'general' }, 'operator', 'test'))!
    const store = p.platform.store
    const kept = await store.get<{ first_boot: Uint8Array | null }>('SELECT first_boot FROM cloud_provisions WHERE id = ?1', a.id)
    expect(kept?.first_boot).toBeTruthy()
    await store.run('UPDATE cloud_provisions SET first_boot = ?2 WHERE id = ?1', b.id, kept!.first_boot)
    await cloud.provisioner.reconcile().catch(() => undefined)
    const toB = hz.book.created.filter((m) => m.name === 'cloud-b').map((m) => readFirstBoot(m.userData))
    expect(toB.map((d) => d.token)).not.toContain(sentA.token)
    expect(toB.map((d) => d.env.MUSTER_NODE_ID)).not.toContain('cloud-a')
    // and the copy is what stopped it: nothing was sent for B on A's record
    expect(toB).toEqual([])
  } finally {
    await hz.stop()
  }
})
