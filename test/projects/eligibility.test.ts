// Where a project may run (docs/security.md, docs/cloud.md), on real Platforms: the local
// node only for a superadmin's own deploys, node labels from enroll, projects
// asking for labels, and the build rule.
import { describe, expect, test } from 'bun:test'
import { PLACED_ORIGIN } from '../../src/federation/placed-projects.ts'
import { createClient } from '../../src/client/index.ts'
import { VERSION } from '../../src/version.ts'
import { enrollRaw, newCert } from '../helpers/certs.ts'
import { onEngine, startPlatform, type TestPlatform } from '../helpers/platform.ts'
import { ENGINES } from '../helpers/postgres.ts'
import { waitFor } from '../helpers/tmp.ts'

async function joinNode(p: TestPlatform, name: string, labels?: Record<string, string>) {
  const e = await p.client.nodes.createEnrollment({ nodeId: name })
  const r = await enrollRaw(p.url, { token: e.token, nodeId: name, certPem: (await newCert(name)).certPem, version: VERSION, ...(labels ? { labels } : {}) })
  expect(r.status).toBe(200)
  const node = createClient({ url: p.url, token: ((await r.json()) as { credential: string }).credential })
  await node.nodes.register({ version: VERSION, capacity: { cpuMillis: 4000, memoryMB: 4096 } })
  return node
}

const nodesOf = async (p: TestPlatform, project: string) => (await p.client.projects.show(project)).placements.map((x) => x.node)

describe.each(ENGINES)('on %s', (engine) => {
  onEngine(engine)

  describe('the local node', () => {
    test('off by default: not listed, and nothing is placed there', async () => {
      await using p = await startPlatform({ remoteDispatch: true })
      expect((await p.client.nodes.list()).nodes).toEqual([])
      expect(await p.client.projects.deploy({ name: 'web', command: ['true'], replicas: 1 })).toMatchObject({ reason: 'no-eligible-node' })
    })

    test('on: listed, and it takes only a superadmin\'s own deploys; an operator\'s update takes a project off it', async () => {
      await using p = await startPlatform({ localNode: true })
      expect((await p.client.nodes.list()).nodes.map((n) => n.name)).toEqual(['local'])
      const op = await p.platform.auth.mintApiToken({ name: 'op', role: 'operator' })
      const operator = createClient({ url: p.url, token: op.token })
      const mine = await p.client.projects.deploy({ name: 'admin-job', command: ['sleep', '30'], replicas: 1 })
      expect(mine.placements[0]!.node).toBe('local')
      expect(mine.deployedBy).toBe(`token:${p.token.slice(4, 20)}`) // a token of no account goes by its id, never its chosen name
      const theirs = await operator.projects.deploy({ name: 'op-job', command: ['sleep', '30'], replicas: 1 })
      expect(theirs).toMatchObject({ reason: 'no-eligible-node', deployedBy: `token:${op.id}` })
      expect(theirs.placements[0]!.node).toBeNull()
      // the operator redeploys the superadmin's project (same spec): it leaves the local node
      const taken = await operator.projects.deploy({ name: 'admin-job', command: ['sleep', '30'], replicas: 1 })
      expect(taken.placements[0]!.node).toBeNull()
      expect(taken.revision).toBe(mine.revision)
      // and a project a controller placed here is no superadmin's either
      const placed = await p.platform.projects.deploy({ name: 'placed', command: ['sleep', '30'], replicas: 1, origin: PLACED_ORIGIN })
      expect(placed.placements[0]!.node).toBeNull()
      // a superadmin deploying it again brings it back
      expect((await p.client.projects.deploy({ name: 'admin-job', command: ['sleep', '30'], replicas: 1 })).placements[0]!.node).toBe('local')
    })
  })

  describe('labels', () => {
    test('a node carries the labels it enrolled with; bad labels are 400 naming the field', async () => {
      await using p = await startPlatform({ remoteDispatch: true })
      await joinNode(p, 'b1', { role: 'build', 'disk.type': 'ssd' })
      expect((await p.client.nodes.list()).nodes.map((n) => [n.name, n.labels])).toEqual([['b1', { 'disk.type': 'ssd', role: 'build' }]])
      const e = await p.client.nodes.createEnrollment({ nodeId: 'b2' })
      for (const labels of [{ Role: 'x' }, { role: '' }, { role: 'a b' }, { role: 'x'.repeat(64) }, Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`k${i}`, 'v'])), ['role=build']]) {
        const r = await enrollRaw(p.url, { token: e.token, nodeId: 'b2', certPem: (await newCert('b2')).certPem, version: VERSION, labels })
        expect(r.status).toBe(400)
        expect(((await r.json()) as { error: { detail: { field: string } } }).error.detail.field).toMatch(/^labels/)
      }
      await expect(p.client.projects.deploy({ name: 'web', command: ['true'], replicas: 1, nodeLabels: { 'Bad Key': 'x' } })).rejects.toMatchObject({ code: 'invalid-request' })
    })

    test('a project goes only to nodes with every label it asks for; a build node takes only build projects', async () => {
      await using p = await startPlatform({ remoteDispatch: true })
      await joinNode(p, 'build-1', { role: 'build' })
      await joinNode(p, 'gen-1', { role: 'general', zone: 'a' })
      await joinNode(p, 'gen-2', { role: 'general', zone: 'b' })
      expect(new Set(await nodesOf(p, (await p.client.projects.deploy({ name: 'web', command: ['true'], replicas: 4 })).name))).toEqual(new Set(['gen-1', 'gen-2']))
      expect(await nodesOf(p, (await p.client.projects.deploy({ name: 'api', command: ['true'], replicas: 2, nodeLabels: { zone: 'a' } })).name)).toEqual(['gen-1', 'gen-1'])
      const compile = await p.client.projects.deploy({ name: 'compile', command: ['true'], replicas: 2, nodeLabels: { role: 'build' } })
      expect(compile.nodeLabels).toEqual({ role: 'build' })
      expect(await nodesOf(p, 'compile')).toEqual(['build-1', 'build-1'])
      expect(await p.client.projects.deploy({ name: 'nowhere', command: ['true'], replicas: 1, nodeLabels: { role: 'build', zone: 'a' } })).toMatchObject({ reason: 'no-eligible-node', shortfall: 0 })
      // the label moves with an update: api asks for zone b now
      await p.client.projects.deploy({ name: 'api', command: ['true'], replicas: 2, nodeLabels: { zone: 'b' } })
      await waitFor(async () => (await nodesOf(p, 'api')).every((n) => n === 'gen-2'), { what: 'api on gen-2' })
    })
  })
})
