// Cloud provisioning with two Platforms on one PostgreSQL (docs/storage-ha.md): only
// the Platform holding the cloud-reconcile lease orders machines, so a
// provision asked of the other one is ordered once, by the holder.
import { describe, expect, test } from 'bun:test'
import { cloudOf } from '../../src/cloud/service.ts'
import { startHetznerFake } from '../fakes/hetzner.ts'
import type { TestPlatform } from '../helpers/platform.ts'
import { waitFor } from '../helpers/tmp.ts'
import { startPair } from './pair.ts'

const BINARY = { url: 'https://releases.example/muster-0.1.0-linux-x64', sha256: 'ab'.repeat(32) }

describe('two Platforms on one PostgreSQL', () => {
  test('a provision asked of the Platform without the cloud-reconcile lease is ordered once, by the holder', async () => {
    const hz = startHetznerFake()
    try {
      await using pair = await startPair({ enrollmentPort: 0, enrollmentHost: '127.0.0.1', enrollmentAddresses: ['127.0.0.1'] })
      for (const p of [pair.a, pair.b]) {
        const cloud = cloudOf(p.platform)
        cloud.endpoints.hetzner = hz.url
        cloud.binary = BINARY
      }
      const runs = (p: TestPlatform) => p.platform.ctx.leases.lease('cloud-reconcile').held
      const holder = await waitFor(() => [pair.a, pair.b].find(runs), { what: 'a cloud-reconcile holder' })
      const other = holder === pair.a ? pair.b : pair.a
      await other.client.cloud.connect('hetzner', hz.token)
      const prv = await other.client.cloud.provision({ provider: 'hetzner', name: 'cloud-1', region: 'fsn1', size: 'cx22' })
      expect(prv.state).toBe('creating')
      expect(hz.book.created).toHaveLength(0)
      // A status read on the other Platform does not order it either.
      expect((await other.client.cloud.provisions()).provisions[0]?.state).toBe('creating')
      expect(hz.book.created).toHaveLength(0)
      await waitFor(async () => (await holder.client.cloud.provisions()).provisions[0]?.state === 'booting', { timeoutMs: 20_000, what: 'the holder ordering the machine' })
      expect(hz.book.created).toHaveLength(1)
      expect((await other.client.cloud.provisions()).provisions[0]).toMatchObject({ id: prv.id, state: 'booting' })
      expect(hz.book.created).toHaveLength(1)
    } finally {
      await hz.stop()
    }
  })
})
