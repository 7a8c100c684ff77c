// Each of the five providers through the Platform: connected over the API with
// its own credential shape; a provision whose first create answer is lost (and
// whose machine the provider does not show at first, where the provider is
// eventually consistent) retries with byte-identical first-boot data and ends
// with exactly one machine, which joins (AWS, GCP, Azure by the identity their
// cloud signs; Hetzner, DigitalOcean with the token, from the server it is
// bound to); it is ready; release deletes it.
import { describe, expect, test } from 'bun:test'
import { cloudOf } from '../../src/cloud/service.ts'
import { createClient } from '../../src/client/index.ts'
import { VERSION } from '../../src/version.ts'
import { readFirstBoot } from '../fakes/first-boot.ts'
import { enrollRaw, newCert } from '../helpers/certs.ts'
import { startListenerPlatform } from '../helpers/node-side.ts'
import { onEngine } from '../helpers/platform.ts'
import { ENGINES } from '../helpers/postgres.ts'
import { tmpDir, waitFor } from '../helpers/tmp.ts'
import { documentFor, makeClouds } from './identity/_clouds.ts'
import { FAST_RETRY } from './_ctx.ts'
import { SETUPS } from './_setups.ts'
import type { ProviderName } from '../../src/wire/cloud.ts'

describe.each(ENGINES)('on %s', (engine) => {
  onEngine(engine)

  describe('provisioning at every provider', () => {
    for (const provider of Object.keys(SETUPS) as ProviderName[]) {
      test(`${provider}: the first create answer lost → the same first-boot data again, one machine, ready, release`, async () => {
        using dir = tmpDir('muster-every-')
        const clouds = makeClouds(dir.path)
        await using p = await startListenerPlatform({ cloudIdentityRoots: clouds.rootsFile })
        const cloud = cloudOf(p.platform)
        cloud.binary = { url: 'https://releases.example/muster', sha256: 'ef'.repeat(32) }
        cloud.retry = FAST_RETRY
        const s = await SETUPS[provider](cloud.endpoints)
        await using _fake = s.fake
        s.fake.book.bootMs = 200
        const connected = await p.client.cloud.connect(provider, s.credentials)
        expect(connected).toMatchObject({ provider, connected: true })
        expect((await p.client.cloud.regions(provider)).regions.some((r) => r.id === s.region)).toBe(true)
        expect((await p.client.cloud.sizes(provider, s.region)).sizes.some((x) => x.id === s.size)).toBe(true)

        // 1. the provider makes the machine, but its answer never arrives; and reads do not show it at first
        s.fake.loseCreates(1)
        if (s.lags) s.fake.book.hiddenMs = 700
        const prv = await p.client.cloud.provision({ provider, name: `${provider}-w1`, region: s.region, size: s.size })
        // a create the provider de-duplicates is sent again at once; any other waits for the next attempt, which looks first
        if (s.idempotent) expect(prv).toMatchObject({ state: 'booting', machineId: expect.any(String) })
        else expect(prv).toMatchObject({ state: 'creating', machineId: null, reason: expect.stringContaining('will retry') })
        expect(s.fake.book.created).toHaveLength(1)
        expect(s.fake.createBodies.length).toBe(s.idempotent ? 2 : 1)

        // 2. the next attempts adopt it, never order a second one; until it shows it is still coming, not failed
        const on = await waitFor(
          async () => {
            await cloud.provisioner.reconcile()
            const x = await p.client.cloud.provisionInfo(prv.id)
            expect(x.state).not.toBe('failed')
            return x.state === 'enrolling' ? x : null
          },
          { what: `${provider} machine running`, timeoutMs: 20_000, intervalMs: 100 },
        )
        expect(on.machineId).not.toBeNull()
        expect(s.fake.book.created).toHaveLength(1)
        expect(s.fake.book.machines.size).toBe(1)
        // every create that reached the provider carried the same bytes
        expect(s.fake.createBodies.length).toBeGreaterThanOrEqual(1)
        const sent = s.fake.createBodies.map((b) => s.userData(b))
        expect(new Set(sent).size).toBe(1)
        expect(sent[0]).toBe(s.fake.book.created[0]!.userData)

        // 3. the machine joins: by its cloud identity (no token in its user data), or with the token, from its server
        const made = s.fake.book.created[0]!
        const boot = readFirstBoot(made.userData)
        expect(boot.env).toMatchObject({ MUSTER_NODE_ID: `${provider}-w1`, MUSTER_PLATFORM_URL: p.enrollUrl, MUSTER_PLATFORM_FINGERPRINT: p.fingerprint, MUSTER_PROBE: 'no' })
        const secrets = typeof s.credentials === 'string' ? [s.credentials] : Object.values(s.credentials).map(String)
        for (const secret of secrets.filter((x) => x.length > 20)) expect(made.userData).not.toContain(secret)
        const certPem = (await newCert(`${provider}-w1`)).certPem
        let admit: Record<string, unknown>
        if (provider === 'aws' || provider === 'gcp' || provider === 'azure') {
          expect(boot.token).toBeUndefined()
          expect(made.userData).not.toContain('mjt_')
          const nonce = provider === 'azure' ? (await p.client.nodes.identityChallenge(`${provider}-w1`)).nonce : undefined
          admit = { identity: { provider, document: await documentFor(clouds, provider, made, { audience: p.enrollUrl, nonce }) } }
        } else admit = { token: boot.token, machineId: made.id }
        const r = await enrollRaw(p.url, { ...admit, nodeId: `${provider}-w1`, certPem, version: VERSION })
        expect(r.status).toBe(200)
        await createClient({ url: p.url, token: ((await r.json()) as { credential: string }).credential }).nodes.register({ version: VERSION })
        expect(await p.client.cloud.provisionInfo(prv.id)).toMatchObject({ state: 'ready', node: { state: 'ready' } })
        // the sealed first-boot data is dropped once it is no longer needed
        expect(await p.platform.store.get('SELECT first_boot FROM cloud_provisions WHERE id = ?1', prv.id)).toEqual({ first_boot: null })

        await expect(p.client.cloud.disconnect(provider)).rejects.toMatchObject({ code: 'cloud-in-use' })
        expect((await p.client.cloud.release(prv.id)).state).toBe('released')
        expect(s.fake.book.machines.size).toBe(0)
        expect(s.fake.book.deleted).toHaveLength(1)
        expect((await p.client.cloud.disconnect(provider)).connected).toBe(false)
      })
    }
  })
})
