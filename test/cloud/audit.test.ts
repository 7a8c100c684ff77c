// The cloud audit: every cloud action (connect, disconnect, provision,
// release, scaling change, autoscale order) with the principal that acted,
// newest first, readable with server.cloud.view; and an action whose record
// cannot be written does not run.
import { describe, expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { cloudOf } from '../../src/cloud/service.ts'
import { createClient } from '../../src/client/index.ts'
import { updateScaling } from '../../src/store/cloud-scaling.ts'
import { startHetznerFake } from '../fakes/hetzner.ts'
import { startListenerPlatform, type ListenerPlatform } from '../helpers/node-side.ts'
import { onEngine } from '../helpers/platform.ts'
import { ENGINES } from '../helpers/postgres.ts'
import { FAST_RETRY } from './_ctx.ts'

async function setup() {
  const hz = startHetznerFake()
  const p = await startListenerPlatform()
  const cloud = cloudOf(p.platform)
  cloud.endpoints.hetzner = hz.url
  cloud.binary = { url: 'https://releases.example/muster', sha256: 'ab'.repeat(32) }
  cloud.retry = FAST_RETRY
  return { hz, p, cloud, async [Symbol.asyncDispose]() {
    await p.close()
    await hz.stop()
  } }
}

/** A client acting through a session of the superadmin account (what the dashboard does). */
async function sessionClient(p: ListenerPlatform) {
  const password = readFileSync(join(p.dataDir, 'platform/initial-superadmin-password'), 'utf8').trim()
  const res = await fetch(`${p.url}/login`, { method: 'POST', headers: { 'content-type': 'application/json', origin: p.url }, body: JSON.stringify({ identifier: 'superadmin', password }), redirect: 'manual' })
  const cookie = res.headers.get('set-cookie')!.split(';')[0]!
  return createClient({ url: p.url, headers: { cookie, origin: p.url } })
}

/** The store refuses every new audit row, as a failing disk or a lost database would. */
const denyAudit = (p: ListenerPlatform) =>
  p.platform.store.engine === 'sqlite'
    ? p.platform.store.script(`CREATE TRIGGER deny_cloud_audit BEFORE INSERT ON cloud_audit BEGIN SELECT RAISE(ABORT, 'disk I/O error'); END`)
    : p.platform.store.script(
        `CREATE FUNCTION deny_cloud_audit() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'disk I/O error'; END $$;
         CREATE TRIGGER deny_cloud_audit BEFORE INSERT ON cloud_audit FOR EACH ROW EXECUTE FUNCTION deny_cloud_audit();`,
      )

describe.each(ENGINES)('on %s', (engine) => {
  onEngine(engine)

  describe('cloud audit', () => {
    test('every cloud action, its principal and outcome, newest first; viewers may read it', async () => {
      await using s = await setup()
      const { p, hz } = s
      await expect(p.client.cloud.connect('hetzner', 'wrong-token')).rejects.toMatchObject({ code: 'cloud-credentials-refused' })
      await p.client.cloud.connect('hetzner', hz.token)
      const admin = await sessionClient(p)
      const prv = await admin.cloud.provision({ provider: 'hetzner', name: 'au-1', region: 'fsn1', size: 'cx22', allowSshInbound: '192.0.2.0/24' })
      await p.client.cloud.setScaling({ enabled: true, provider: 'hetzner', region: 'fsn1', size: 'cx22', maxMachines: 2 })
      await admin.cloud.release(prv.id)
      await p.client.cloud.setScaling({ enabled: false })
      await p.client.cloud.disconnect('hetzner')

      const viewer = p.clientWith((await p.platform.auth.mintApiToken({ name: 'watcher', role: 'viewer' })).token)
      const { entries } = await viewer.cloud.audit()
      const test = `token:${p.token.slice(4, 20)}` // a token of no account goes by its id (docs/accounts-audit.md)
      expect(entries.map((e) => [e.action, e.principal, e.via, e.provider, e.target, e.outcome])).toEqual([
        ['disconnect', test, 'api-token', 'hetzner', null, 'ok'],
        ['scaling', test, 'api-token', 'hetzner', null, 'ok'],
        ['release', 'superadmin', 'session', 'hetzner', 'au-1', 'ok'],
        ['scaling', test, 'api-token', 'hetzner', null, 'ok'],
        ['provision', 'superadmin', 'session', 'hetzner', 'au-1', 'ok'],
        ['connect', test, 'api-token', 'hetzner', null, 'ok'],
        ['connect', test, 'api-token', 'hetzner', null, 'failed'],
      ])
      expect(entries[4]!.detail).toBe(`${prv.id}: hetzner fsn1 cx22 role=general ssh-from=192.0.2.0/24`)
      expect(entries[6]!.detail).toContain('hetzner refused the credentials')
      expect(entries[3]!.detail).toBe('enabled=true maxMachines=2 provider=hetzner region=fsn1 size=cx22')
      expect(entries.every((e) => /^\d{4}-\d\d-\d\dT/.test(e.at))).toBe(true)
      expect(JSON.stringify(entries)).not.toContain(hz.token)
      await expect(p.clientWith().cloud.audit()).rejects.toMatchObject({ code: 'unauthorized' })
    })

    test('the autoscaler’s order is audited as the autoscaler', async () => {
      await using s = await setup()
      const { p, cloud } = s
      await p.client.cloud.connect('hetzner', s.hz.token)
      await p.client.cloud.setScaling({ enabled: true, provider: 'hetzner', region: 'fsn1', size: 'cx22' })
      // a shortfall held long enough, without waiting two minutes
      cloud.deps.projects.shortfall = () => ({ total: 1 }) as ReturnType<typeof cloud.deps.projects.shortfall>
      expect(await cloud.autoscaler.tick()).toMatchObject({ action: 'none', why: 'holding' })
      p.advance(3 * 60_000)
      const d = await cloud.autoscaler.tick()
      expect(d).toMatchObject({ action: 'requested' })
      const order = (await p.client.cloud.audit()).entries[0]!
      expect(order).toMatchObject({ action: 'autoscale-order', principal: 'autoscaler', via: 'autoscaler', provider: 'hetzner', outcome: 'ok' })
      expect(order.detail).toContain((d as { provisionId: string }).provisionId)
    })

    test('an action whose audit record cannot be written does not run', async () => {
      await using s = await setup()
      const { p, hz, cloud } = s
      await p.client.cloud.connect('hetzner', hz.token)
      const prv = await p.client.cloud.provision({ provider: 'hetzner', name: 'au-2', region: 'fsn1', size: 'cx22' })
      const before = hz.calls.length
      await denyAudit(p)
      const refused = { code: 'audit-unavailable', detail: { status: 503 } }
      // connect: the provider is never asked, nothing is stored
      await p.client.cloud.disconnect('hetzner').catch(() => {})
      await expect(p.client.cloud.connect('digitalocean', 'dop_v1_x')).rejects.toMatchObject(refused)
      expect((await p.client.cloud.status()).providers.find((x) => x.provider === 'digitalocean')!.connected).toBe(false)
      // provision: nothing recorded, nothing ordered
      await expect(p.client.cloud.provision({ provider: 'hetzner', name: 'au-3', region: 'fsn1', size: 'cx22' })).rejects.toMatchObject(refused)
      expect((await p.client.cloud.provisions()).provisions.map((x) => x.name)).toEqual(['au-2'])
      // release: the machine stays
      await expect(p.client.cloud.release(prv.id)).rejects.toMatchObject(refused)
      expect(hz.book.machines.size).toBe(1)
      expect((await p.client.cloud.provisionInfo(prv.id)).state).not.toBe('released')
      // scaling: unchanged
      await expect(p.client.cloud.setScaling({ enabled: true, provider: 'hetzner', region: 'fsn1', size: 'cx22' })).rejects.toMatchObject(refused)
      expect((await p.client.cloud.scaling()).enabled).toBe(false)
      // the autoscaler orders nothing
      await updateScaling(p.platform.store, { enabled: 1, provider: 'hetzner', region: 'fsn1', size: 'cx22', max_machines: 5 })
      cloud.deps.projects.shortfall = () => ({ total: 1 }) as ReturnType<typeof cloud.deps.projects.shortfall>
      await cloud.provisioner.reconcile()
      cloud.provisioner.timeoutMs = 1 // the provision above stops starting, so nothing blocks an order
      await cloud.provisioner.reconcile()
      await cloud.autoscaler.tick()
      p.advance(3 * 60_000)
      expect(await cloud.autoscaler.tick()).toMatchObject({ action: 'none', why: 'audit-unavailable' })
      // nothing but reads reached the provider while the audit was down
      expect(hz.calls.slice(before).filter((c) => !c.startsWith('GET '))).toEqual([])
      expect(hz.book.created).toHaveLength(1)
    })
  })
})
