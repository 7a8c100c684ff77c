// The Overview and the project pages in headless Chromium
// against a real Platform with a small fleet: nodes that enrolled and
// heartbeat through the real routes, reporting the replicas placed on them.
// The overview's figures are checked against what the other routes say
// (nodes list, projects), on the API and on the screen; operators deploy,
// scale, redeploy and remove through the buttons; a viewer gets no buttons,
// and the Platform refuses a viewer who calls the API from the page anyway.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Browser, Page } from 'playwright-core'
import { hashPassword } from '../../src/auth/auth.ts'
import { insertAccount } from '../../src/store/accounts.ts'
import type { Project } from '../../src/client/index.ts'
import { startPlatform, type TestPlatform } from '../helpers/platform.ts'
import { beat, enrollNode, launch, logIn, newPage, reportPlaced, SLOW, superadminPassword, type FleetNode } from './_fleet.ts'

const CAPACITY = { cpuMillis: 2000, memoryMB: 4096 }
const SECRET = 'hunter2-do-not-show'
let browser: Browser
let p: TestPlatform
let workers: FleetNode[]
const errors: string[] = []

beforeAll(async () => {
  browser = await launch()
  p = await startPlatform({ remoteDispatch: true, enrollmentPort: 0, enrollmentAddresses: ['127.0.0.1'], enrollmentHost: '127.0.0.1' })
  workers = [await enrollNode(p, 'n1'), await enrollNode(p, 'n2'), await enrollNode(p, 'n3')]
  const drained = await enrollNode(p, 'n4')
  await enrollNode(p, 'n5') // never heartbeats: enrolled
  const revoked = await enrollNode(p, 'n6')
  for (const n of [...workers, drained, revoked]) await beat(p, n, CAPACITY)
  await p.client.nodes.drain('n4', { drained: true })
  await p.client.nodes.revoke('n6')
  await p.client.projects.deploy({ name: 'web', replicas: 3, cpu: 500, memory: 512, env: { DB_PASSWORD: SECRET }, command: ['/bin/web'] })
  await p.client.projects.deploy({ name: 'queue', replicas: 2, cpu: 250, memory: 256, command: ['/bin/queue'] })
  await p.client.projects.deploy({ name: 'batch', replicas: 3, cpu: 1500, memory: 1024, command: ['/bin/batch'] }) // not all fit
  await reportPlaced(p, workers, CAPACITY, ['queue/1'])
  for (const [name, role] of [['olga', 'operator'], ['vera', 'viewer']] as const) {
    await insertAccount(p.platform.store, { name, role, passwordHash: await hashPassword(`${name}-pass-1`), now: Date.now() })
  }
}, 120_000)

afterAll(async () => {
  await browser?.close()
  await p?.close()
})

/** What the overview must say, worked out from the node list and the projects as the other routes give them. */
async function expectedFromApi() {
  const { nodes, counts } = await p.client.nodes.list()
  const projects = await p.client.projects.listAll()
  const state = new Map(nodes.map((n) => [n.name, n.state]))
  const ready = nodes.filter((n) => n.state === 'ready' && n.capacity)
  const placed = projects.flatMap((pr) => pr.placements.filter((x) => x.node !== null).map((x) => ({ ...x, project: pr })))
  const onReady = placed.filter((x) => state.get(x.node!) === 'ready')
  const perNode = new Map<string, { placed: number; running: number; cpu: number; memory: number }>()
  for (const x of placed) {
    const u = perNode.get(x.node!) ?? { placed: 0, running: 0, cpu: 0, memory: 0 }
    u.placed++
    if (x.state === 'running') u.running++
    u.cpu += x.project.cpu
    u.memory += x.project.memory
    perNode.set(x.node!, u)
  }
  const behind = (pr: Project) => pr.replicas - pr.placements.filter((x) => x.state === 'running').length
  return {
    names: nodes.map((n) => n.name),
    perNode,
    counts,
    drained: nodes.filter((n) => n.drained).length,
    capacity: { cpuMillis: ready.reduce((a, n) => a + n.capacity!.cpuMillis, 0), memoryMB: ready.reduce((a, n) => a + n.capacity!.memoryMB!, 0) },
    used: { cpuMillis: onReady.reduce((a, x) => a + x.project.cpu, 0), memoryMB: onReady.reduce((a, x) => a + x.project.memory, 0) },
    replicas: {
      desired: projects.reduce((a, pr) => a + pr.replicas, 0),
      placed: placed.length,
      running: placed.filter((x) => x.state === 'running').length,
      shortfall: projects.reduce((a, pr) => a + pr.shortfall, 0),
    },
    attention: projects
      .filter((pr) => behind(pr) > 0)
      .sort((a, b) => behind(b) - behind(a) || a.name.localeCompare(b.name))
      .map((pr) => pr.name),
    never: nodes.filter((n) => n.state !== 'revoked' && n.lastSeenAt === null).length,
    seen: nodes.filter((n) => n.state !== 'revoked' && n.lastSeenAt !== null).length,
  }
}

const stat = (page: Page, key: string) => page.locator(`#panel-overview [data-stat="${key}"]`).getAttribute('data-value').then(Number)

describe('overview', () => {
  test('its figures are those of the node list and the projects, on the API and on the screen', SLOW, async () => {
    const want = await expectedFromApi()
    // The fleet as built: 3 ready + 1 drained ready, 1 enrolled, 1 revoked; batch is short; queue/1 not running.
    expect(want.counts).toEqual({ total: 6, ready: 4, unreachable: 0, enrolled: 1, revoked: 1 })
    expect(want.replicas.shortfall).toBeGreaterThan(0)
    expect(want.attention).toContain('queue')

    const o = await p.client.overview.get()
    expect(o.nodes.counts).toEqual(want.counts)
    expect(o.nodes.drained).toBe(1)
    expect(o.nodes.capacity).toEqual(want.capacity)
    expect(o.nodes.used).toEqual(want.used)
    expect(o.replicas).toEqual(want.replicas)
    expect(o.nodes.heartbeats.never).toBe(want.never)
    expect(o.nodes.heartbeats.within15s + o.nodes.heartbeats.within1m + o.nodes.heartbeats.within5m + o.nodes.heartbeats.older).toBe(want.seen)
    expect(o.projects!.total).toBe(3)
    expect(o.projects!.attention.map((x) => x.name)).toEqual(want.attention)
    // One Platform: it is this one, and it runs every loop.
    expect(o.platforms.map((x) => [x.id, x.self])).toEqual([[o.self.id, true]])
    expect(o.platforms[0]!.runs).toContain('placement')
    expect(o.loops.length).toBeGreaterThan(0)
    expect(o.loops.every((l) => l.platform === o.self.id)).toBe(true)
    expect(o.self.url).toBe(p.url)

    const { ctx, page } = await newPage(browser, errors)
    await logIn(page, p.url, 'superadmin', superadminPassword(p))
    await page.locator('#panel-overview [data-stat="nodes.total"]').waitFor()
    for (const s of ['total', 'ready', 'unreachable', 'enrolled', 'revoked'] as const) expect(await stat(page, `nodes.${s}`)).toBe(want.counts[s])
    expect(await stat(page, 'nodes.drained')).toBe(1)
    expect(await stat(page, 'cpu.used')).toBe(want.used.cpuMillis)
    expect(await stat(page, 'cpu.capacity')).toBe(want.capacity.cpuMillis)
    expect(await stat(page, 'memory.used')).toBe(want.used.memoryMB)
    expect(await stat(page, 'memory.capacity')).toBe(want.capacity.memoryMB)
    for (const k of ['desired', 'placed', 'running', 'shortfall'] as const) expect(await stat(page, `replicas.${k}`)).toBe(want.replicas[k])
    expect(await page.locator('#panel-overview [data-stat="self"]').textContent()).toBe(o.self.id)
    expect(await page.locator(`#panel-overview tr[data-platform="${o.self.id}"]`).textContent()).toContain('you are here')
    expect(await page.locator('#panel-overview [data-verdict]').getAttribute('data-verdict')).toBe('attention')
    expect(await page.locator('#panel-overview tr[data-attention]').evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-attention')))).toEqual(want.attention)
    // Each node's line: replicas running of placed, and the bars' figures.
    await page.locator('#panel-overview tr[data-fleet-node="n1"]').waitFor()
    expect(await page.locator('#panel-overview tr[data-fleet-node]').evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-fleet-node')))).toEqual(want.names)
    for (const name of want.names) {
      const u = want.perNode.get(name) ?? { placed: 0, running: 0, cpu: 0, memory: 0 }
      const row = page.locator(`#panel-overview tr[data-fleet-node="${name}"]`)
      expect(await row.locator('td.replicas').textContent()).toBe(`${u.running} / ${u.placed} running`)
      if (name !== 'n5') expect(Number(await row.locator('td.cpu [role=meter]').getAttribute('aria-valuenow'))).toBe(u.cpu)
    }
    // Clicking a project that needs attention opens its page.
    await page.locator('#panel-overview tr[data-attention="queue"]').getByRole('button', { name: 'queue' }).click()
    await page.locator('[data-project-page="queue"]').waitFor()
    await ctx.close()
    expect(errors).toEqual([])
  })

  test('the node pages walk every node once, in name order, with what runs on each; a state filter keeps only that state', async () => {
    const want = await expectedFromApi()
    const seen: string[] = []
    let cursor: string | undefined
    do {
      const page = await p.client.overview.nodes({ limit: 2, cursor })
      expect(page.nodes.length).toBeLessThanOrEqual(2)
      for (const n of page.nodes) {
        seen.push(n.name)
        const u = want.perNode.get(n.name) ?? { placed: 0, running: 0, cpu: 0, memory: 0 }
        expect({ name: n.name, replicas: n.replicas, used: n.used }).toEqual({ name: n.name, replicas: { placed: u.placed, running: u.running }, used: { cpuMillis: u.cpu, memoryMB: u.memory } })
      }
      cursor = page.nextCursor ?? undefined
    } while (cursor)
    expect(seen).toEqual(want.names)
    const ready = await p.client.overview.nodes({ state: 'ready' })
    expect(ready.nodes.map((n) => n.name)).toEqual(['n1', 'n2', 'n3', 'n4'])
    expect(ready.nodes.every((n) => n.heartbeatAgeMs !== null && n.capacity?.cpuMillis === CAPACITY.cpuMillis)).toBe(true)
    expect((await p.client.overview.nodes({ state: 'enrolled' })).nodes.map((n) => [n.name, n.heartbeatAgeMs, n.capacity])).toEqual([['n5', null, null]])
    // Bad parameters are 400 naming the parameter, as on /api/v1/nodes.
    const bad = await fetch(`${p.url}/api/v1/overview/nodes?state=sleepy`, { headers: { authorization: `Bearer ${p.token}` } })
    expect(bad.status).toBe(400)
    expect(((await bad.json()) as { error: { message: string } }).error.message).toContain('state')
    expect((await fetch(`${p.url}/api/v1/overview`)).status).toBe(401)
  })
})
