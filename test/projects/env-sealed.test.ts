// project env values are sealed wherever the store holds them
// (the project, its previous revision, each node's assignments, the specs a
// controller placed on an office). A read-only look at the store after deploys
// with env — every row of every table, as a read-only database role sees it —
// finds no value, nor a plain digest that would confirm a guessed one. Viewers
// still see "***"; the node still receives the values in its signed assignments.
import { describe, expect, test } from 'bun:test'
import { createClient } from '../../src/client/index.ts'
import { canonicalJson } from '../../src/crypto/ed25519.ts'
import { sha256Hex } from '../../src/crypto/tokens.ts'
import { openStore, type Store } from '../../src/store/db.ts'
import { VERSION } from '../../src/version.ts'
import { startOffice, vouchedClient } from '../federation/_helpers.ts'
import { federationOf } from '../../src/federation/service.ts'
import { enrollRaw, newCert } from '../helpers/certs.ts'
import { onEngine, startPlatform, type TestPlatform } from '../helpers/platform.ts'
import { ENGINES, freshDatabase } from '../helpers/postgres.ts'
import { tmpDir, waitFor } from '../helpers/tmp.ts'

const ONE = 'v4lue-0ne-of-the-db-password'
const TWO = 'v4lue-tw0-after-the-redeploy'
const PLACED = 'v4lue-thr33-placed-by-the-controller'

/** Every row of every table, as text: what a read-only role can SELECT. */
async function everything(store: Store): Promise<string> {
  const tables =
    store.engine === 'sqlite'
      ? await store.all<{ t: string }>("SELECT name AS t FROM sqlite_master WHERE type = 'table'")
      : await store.all<{ t: string }>("SELECT tablename AS t FROM pg_tables WHERE schemaname = current_schema()")
  expect(tables.map((t) => t.t)).toContain('node_assignments')
  let out = ''
  for (const { t } of tables) {
    for (const row of await store.all(`SELECT * FROM ${t}`)) {
      out += `${t}: ${JSON.stringify(row, (_k, v) => (v instanceof Uint8Array ? Buffer.from(v).toString('latin1') : v))}\n`
    }
  }
  return out
}

async function joinNode(p: TestPlatform, name: string) {
  const e = await p.client.nodes.createEnrollment({ nodeId: name })
  const r = await enrollRaw(p.url, { token: e.token, nodeId: name, certPem: (await newCert(name)).certPem, version: VERSION })
  expect(r.status).toBe(200)
  const node = createClient({ url: p.url, token: ((await r.json()) as { credential: string }).credential })
  await node.nodes.register({ version: VERSION, capacity: { cpuMillis: 4000, memoryMB: 4096 } })
  return node
}

describe.each(ENGINES)('on %s', (engine) => {
  onEngine(engine)

  test('after deploys with env, the store holds no env value; viewers see ***; the node receives them', { timeout: 60_000 }, async () => {
    using d = tmpDir()
    await using p = await startPlatform({ remoteDispatch: true })
    const node = await joinNode(p, 'w1')
    await p.client.projects.deploy({ name: 'api', command: ['sleep', '600'], env: { DB_PASSWORD: ONE, MODE: 'x' }, replicas: 1 })
    const first = await waitFor(async () => ((await node.projects.assignments()).payload.replicas.length === 1 ? await node.projects.assignments() : null), { what: 'w1 assigned' })
    expect(first.payload.replicas[0]!.env).toEqual({ DB_PASSWORD: ONE, MODE: 'x' })
    // A redeploy with another value: the first revision keeps running (and its env stays stored) until the new one runs.
    await p.client.projects.deploy({ name: 'api', command: ['sleep', '600'], env: { DB_PASSWORD: TWO, MODE: 'x' }, replicas: 1 })
    const both = await waitFor(async () => {
      const a = await node.projects.assignments()
      return a.payload.replicas.length === 2 ? a : null
    }, { what: 'both revisions assigned' })
    expect(both.payload.replicas.map((r) => r.env.DB_PASSWORD).sort()).toEqual([ONE, TWO].sort())
    // The controller (this Platform) places a project on an office, which stores the spec.
    const { token } = await p.client.federation.mint({ officeId: 'office-a' })
    await using o = await startOffice(p.url, token, { dataDir: d.path })
    await waitFor(() => federationOf(o.platform).link?.state === 'connected', { what: 'the office connected' })
    await p.client.federation.place('office-a', { name: 'placed', command: ['sleep', '600'], env: { OFFICE_SECRET: PLACED }, replicas: 1, cpu: 10, memory: 8 })
    // (A joined office's local tokens are suspended: its operators come in with a vouch.)
    const office = await vouchedClient(p, o)
    expect((await office.federation.placedProjects()).projects.map((x) => x.envKeys)).toEqual([['OFFICE_SECRET']])
    expect((await office.projects.show('placed')).env).toEqual({ OFFICE_SECRET: PLACED })

    // The read-only look, at both Platforms' stores.
    const dump = (await everything(p.platform.store)) + (await everything(o.platform.store))
    const found = (text: string) => (dump.includes(text) ? text : null)
    expect([ONE, TWO, PLACED].flatMap((v) => [found(v), found(Buffer.from(v).toString('base64'))]).filter(Boolean)).toEqual([])
    // The rows are there, sealed: projects (env and previous), node_assignments, office_placed_projects.
    expect(dump.match(/sealed1:/g)?.length).toBeGreaterThanOrEqual(5)
    // Nor the plain digest of a node's replicas, which would confirm a guessed value.
    expect(found(sha256Hex(canonicalJson(both.payload.replicas)))).toBeNull()
    // The Platform itself still reads them (a restart on the same store serves the same).
    expect((await p.client.projects.show('api')).env).toEqual({ DB_PASSWORD: TWO, MODE: 'x' })
    const viewer = createClient({ url: p.url, token: (await p.platform.auth.mintApiToken({ name: 'v', role: 'viewer' })).token })
    expect((await viewer.projects.show('api')).env).toEqual({ DB_PASSWORD: '***', MODE: '***' })
  })

  test('a sealed value moved to another project or column does not open there', async () => {
    using d = tmpDir()
    const db = engine === 'postgres' ? await freshDatabase() : undefined
    try {
      const p = await startPlatform({ dataDir: d.path, database: db?.url, remoteDispatch: true })
      try {
        await p.client.projects.deploy({ name: 'a', command: ['true'], env: { K: ONE }, replicas: 0 })
        await p.client.projects.deploy({ name: 'b', command: ['true'], env: { K: 'b' }, replicas: 0 })
        const sealedA = (await p.platform.store.get<{ env: string }>("SELECT env FROM projects WHERE name = 'a'"))!.env
        expect(sealedA.startsWith('sealed1:')).toBe(true)
        await p.platform.store.run("UPDATE projects SET env = ?1 WHERE name = 'b'", sealedA)
      } finally {
        await p.close()
      }
      await expect(startPlatform({ dataDir: d.path, database: db?.url, remoteDispatch: true })).rejects.toThrow(/projects\.env of b does not open/)
    } finally {
      await db?.drop()
    }
  })

  test('env an earlier version stored in plain text is sealed when this version starts, and still served', async () => {
    using d = tmpDir()
    const db = engine === 'postgres' ? await freshDatabase({ empty: true }) : undefined
    try {
      const old = await openStore(db?.url ?? `${d.path}/muster.db`)
      const now = Date.now()
      await old.run("INSERT INTO projects (name, command, env, replicas, cpu, memory, revision, previous, origin, created_at, updated_at) VALUES ('api', '[\"true\"]', ?1, 0, 10, 8, 2, ?2, 'local', ?3, ?3)", JSON.stringify({ K: ONE }), JSON.stringify({ revision: 1, command: ['true'], env: { K: TWO }, cpu: 10, memory: 8, placements: [], since: now }), now)
      await old.run("INSERT INTO node_assignments (node, revision, digest, replicas) VALUES ('w1', 1, 'x', ?1)", JSON.stringify([{ project: 'api', replica: 0, revision: 2, command: ['true'], env: { K: ONE }, cpu: 10, memory: 8 }]))
      await old.run("INSERT INTO office_placed_projects (name, spec_json, placed_at) VALUES ('placed', ?1, ?2)", JSON.stringify({ name: 'placed', command: ['true'], env: { K: PLACED }, replicas: 0 }), now)
      await old.close()
      await using p = await startPlatform({ dataDir: d.path, database: db?.url, remoteDispatch: true })
      const dump = await everything(p.platform.store)
      expect([ONE, TWO, PLACED].filter((v) => dump.includes(v))).toEqual([])
      expect((await p.client.projects.show('api')).env).toEqual({ K: ONE })
    } finally {
      await db?.drop()
    }
  })
})
