// Two Platforms on one PostgreSQL act as one (docs/storage-ha.md): a change made on
// either takes effect on both within a second; the Platform holding the
// placement lease places, and both serve every node's signed assignments from
// the store, waking the long polls of the nodes connected to them.
import { describe, expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { VERSION } from '../../src/version.ts'
import { checkAssignments } from '../../src/signed/documents.ts'
import type { SignedAssignments } from '../../src/wire/projects.ts'
import { createClient, type Client } from '../../src/client/index.ts'
import type { TestPlatform } from '../helpers/platform.ts'
import { enrollRaw, newCert } from '../helpers/certs.ts'
import { waitFor } from '../helpers/tmp.ts'
import { startPair } from './pair.ts'

type TrustKey = { kid: string; publicKey: string; notBefore: string; notAfter: string }

/** Enrolls `name` through `p` and sends one heartbeat there. */
async function joinNode(p: TestPlatform, name: string) {
  const e = await p.client.nodes.createEnrollment({ nodeId: name })
  const r = await enrollRaw(p.url, { token: e.token, nodeId: name, certPem: (await newCert(name)).certPem, version: VERSION })
  expect(r.status).toBe(200)
  const answer = (await r.json()) as { credential: string; trustKeys: TrustKey[]; platforms: { url: string }[] }
  const on = (q: TestPlatform): Client => createClient({ url: q.url, token: answer.credential })
  await on(p).nodes.register({ version: VERSION, capacity: { cpuMillis: 2000, memoryMB: 2048 } })
  return { ...answer, on }
}

const stateOn = async (p: TestPlatform, name: string) => (await p.client.nodes.list()).nodes.find((n) => n.name === name)

/** Resolves with how long `fn` took to become true, failing past `ms`. */
async function within(ms: number, what: string, fn: () => Promise<boolean>): Promise<number> {
  const t0 = performance.now()
  await waitFor(fn, { timeoutMs: ms, intervalMs: 20, what })
  return performance.now() - t0
}

describe('two Platforms on one PostgreSQL', () => {
  test('a project deployed on the follower is placed by the leader and served by both; long polls wake on the Platform the node uses', async () => {
    await using pair = await startPair()
    const { a, b } = pair
    expect(a.platform.ctx.leases.lease('placement').held).toBe(true)
    expect(b.platform.ctx.leases.lease('placement').held).toBe(false)
    const n1 = await joinNode(a, 'n1')
    const n2 = await joinNode(b, 'n2')
    // the enroll answer names both Platforms
    expect(n2.platforms.map((p) => p.url).sort()).toEqual([a.url, b.url].sort())
    await waitFor(async () => (await stateOn(a, 'n2'))?.state === 'ready' && (await stateOn(b, 'n1'))?.state === 'ready', { what: 'both nodes ready on both Platforms' })

    // n2 long-polls b before it has ever been assigned anything; a deploy wakes it within a second
    const t1 = performance.now()
    const first = n2.on(b).projects.assignments(0, 20)
    const web = await b.client.projects.deploy({ name: 'web', command: ['sleep', '60'], replicas: 2 })
    expect(web.placements.map((p) => p.node).sort()).toEqual(['n1', 'n2'])
    expect(((await first) as SignedAssignments).payload.replicas.map((r) => r.project)).toEqual(['web'])
    expect(performance.now() - t1).toBeLessThan(2000)
    // n2 (connected to b) gets its document from b, signed with the keys n1 got from a: one key set
    const doc = (await n2.on(b).projects.assignments()) as SignedAssignments
    expect(checkAssignments(doc, n1.trustKeys, 'n2', 0).ok).toBe(true)
    expect(doc.payload.replicas.map((r) => r.project)).toEqual(['web'])
    expect(await n1.on(b).projects.assignments()).toMatchObject({ payload: { revision: doc.payload.revision } })

    // n1 long-polls b; removing the project on a wakes it within a second
    const revision = ((await n1.on(b).projects.assignments()) as SignedAssignments).payload.revision
    const t0 = performance.now()
    const woke = n1.on(b).projects.assignments(revision, 20)
    await a.client.projects.remove('web')
    const next = (await woke) as SignedAssignments
    expect(performance.now() - t0).toBeLessThan(1500)
    expect(next.payload.revision).toBeGreaterThan(revision)
    expect(next.payload.replicas).toEqual([])
    expect((await b.client.projects.list()).projects).toEqual([])
  })

  test('revoke, rotate, drain, join-token revoke, logout and API-token revoke on one Platform hold on the other within a second', async () => {
    await using pair = await startPair()
    const { a, b } = pair
    const n1 = await joinNode(a, 'n1')
    await joinNode(a, 'n2')
    expect((await n1.on(b).nodes.register({})).state).toBe('ready')

    // rotate on a: b's heartbeat answer names the new generation
    const { generation } = await a.client.nodes.rotate('n1')
    await within(1000, 'b sees the rotation', async () => (await n1.on(b).nodes.register({})).generation === generation)
    // drain on b: a lists the node drained
    await b.client.nodes.drain('n2')
    await within(1000, 'a sees the drain', async () => (await stateOn(a, 'n2'))?.drained === true)
    // revoke on a: b refuses the node's credential
    await a.client.nodes.revoke('n1')
    await within(1000, 'b refuses the revoked node', async () => (await n1.on(b).nodes.register({}).then(() => 'ok', (e: { code?: string }) => e.code)) === 'node-revoked')

    // a node that never sent a heartbeat (nothing for a Platform to notice by reading heartbeats) is refused
    // by b within a second of its revoke on a: the change notice alone carries it
    const e3 = await a.client.nodes.createEnrollment({ nodeId: 'quiet' })
    const quiet = (await (await enrollRaw(a.url, { token: e3.token, nodeId: 'quiet', certPem: (await newCert('quiet')).certPem, version: VERSION })).json()) as { credential: string }
    const quietOn = (p: TestPlatform) => createClient({ url: p.url, token: quiet.credential }).projects.assignments().then(() => 'ok', (e: { code?: string }) => e.code)
    await within(1000, 'b knows the quiet node', async () => (await quietOn(b)) === 'ok')
    await a.client.nodes.revoke('quiet')
    await within(1000, 'b refuses the quiet node', async () => (await quietOn(b)) === 'node-revoked')

    // a fleet token revoked on b is refused by a at once
    const fleet = await a.client.nodes.createJoinToken({ maxUses: 5 })
    await b.client.nodes.revokeJoinToken(fleet.id)
    const refused = await enrollRaw(a.url, { token: fleet.token, nodeId: 'n3', certPem: (await newCert('n3')).certPem })
    expect(refused.status).toBe(403)

    // a session opened on a is refused by b as soon as it logs out on a
    const password = readFileSync(join(a.dataDir, 'platform', 'initial-superadmin-password'), 'utf8').trim()
    const { sessionId } = await a.platform.auth.login('superadmin', password)
    const asSession = (p: TestPlatform) => fetch(`${p.url}/api/v1/nodes`, { headers: { cookie: `muster_session=${sessionId}` } })
    expect((await asSession(b)).status).toBe(200)
    await a.platform.auth.logout(sessionId)
    expect((await asSession(b)).status).toBe(401)

    // an API token revoked in the store (there is no revoke route yet) is refused by both at once:
    // operators' credentials are read from the store on every request, never cached
    const { token, id } = await a.platform.auth.mintApiToken({ name: 'short-lived', role: 'viewer' })
    expect((await createClient({ url: b.url, token }).nodes.list()).nodes.length).toBeGreaterThan(0)
    await a.platform.ctx.store.run('UPDATE api_tokens SET revoked_at = ?2 WHERE id = ?1', id, Date.now())
    await expect(createClient({ url: b.url, token }).nodes.list()).rejects.toMatchObject({ code: 'unauthorized' })
  })

  test('when the leader stops, the other Platform places at once; heartbeat answers list only the live Platforms', async () => {
    await using pair = await startPair()
    const { a, b } = pair
    const n1 = await joinNode(b, 'n1')
    expect((await n1.on(b).nodes.register({})).platforms?.map((p) => p.url).sort()).toEqual([a.url, b.url].sort())
    await a.close()
    await within(2000, 'b runs placement', async () => b.platform.ctx.leases.lease('placement').held)
    expect((await n1.on(b).nodes.register({})).platforms?.map((p) => p.url)).toEqual([b.url])
    const web = await b.client.projects.deploy({ name: 'web', command: ['sleep', '60'], replicas: 1 })
    expect(web.placements[0]!.node).toBe('n1')
    // a restarted Platform rejoins: it is listed again and serves the same state
    const c = await pair.another()
    await within(3000, 'the new Platform is listed', async () => ((await n1.on(b).nodes.register({})).platforms?.length ?? 0) === 2)
    expect((await c.client.projects.show('web')).placements[0]!.node).toBe('n1')
    const info = await c.client.nodes.platform()
    expect(info.platforms?.find((p) => p.url === b.url)?.runs).toContain('placement')
  })

  test('a Platform whose master key cannot open the store refuses to start and names the file to copy', async () => {
    await using pair = await startPair()
    const other = pair.another({ masterKey: false })
    await expect(other).rejects.toMatchObject({ code: 'store-sealed' })
    await expect(other).rejects.toThrow('Copy platform/master.key')
  })
})
