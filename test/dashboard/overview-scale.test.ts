// The Overview at fleet size: with 100,000 registered nodes and
// a project placed across them, GET /api/v1/overview answers within 1 s with
// figures that match the seeded fleet and the node list's counts, its size
// does not grow with the fleet, and the page shows them and pages the nodes
// 50 at a time in headless Chromium against a real Platform.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import type { Browser, Page } from 'playwright-core'
import type { FleetOverview } from '../../src/client/index.ts'
import { seedNodes, type SeedKind } from '../helpers/seed-nodes.ts'
import { startPlatform, type TestPlatform } from '../helpers/platform.ts'
import { waitFor } from '../helpers/tmp.ts'
import { launch, logIn, newPage, superadminPassword } from './_fleet.ts'

const COUNT = 100_000
// Seeded 'ready' nodes were seen when seeded and 'unreachable' ones an hour before: ready for 30 minutes, however slow the machine.
const STALE_MS = 30 * 60_000
const KINDS: SeedKind[] = ['ready', 'ready', 'ready', 'unreachable', 'enrolled', 'revoked', 'ready', 'ready']
const names = Array.from({ length: COUNT }, (_, i) => `node-${String(i).padStart(6, '0')}`)
// Seeded capacity (test/helpers/seed-nodes.ts): 2000 millicores and 4096 MB for every node that was seen.
const SEEDED = { cpuMillis: 2000, memoryMB: 4096 }
const PROJECT = { name: 'fleetwide', replicas: 40, cpu: 300, memory: 200 }

let browser: Browser
let p: TestPlatform
let page: Page
const errors: string[] = []
const expected = { total: COUNT, ready: 0, unreachable: 0, enrolled: 0, revoked: 0 }
names.forEach((_, i) => expected[KINDS[i % KINDS.length] as keyof typeof expected]++)

beforeAll(async () => {
  const first = await startPlatform({ remoteDispatch: true, keepDir: true, nodeStaleAfterMs: STALE_MS })
  await seedNodes(first.platform.store, names, (i) => KINDS[i % KINDS.length]!)
  await first.close()
  p = await startPlatform({ remoteDispatch: true, dataDir: first.dataDir, nodeStaleAfterMs: STALE_MS })
  await p.client.projects.deploy({ ...PROJECT, command: ['/bin/serve'] })
  browser = await launch()
  page = (await newPage(browser, errors)).page
  await logIn(page, p.url, 'superadmin', superadminPassword(p))
}, 180_000)

afterAll(async () => {
  await browser?.close()
  await p?.close()
})

/** The best of three timed GETs (other processes share these two cores; a slow route is slow every time). */
async function timed(path: string): Promise<{ ms: number; body: string }> {
  let best = { ms: Number.POSITIVE_INFINITY, body: '' }
  for (let i = 0; i < 3; i++) {
    const t0 = performance.now()
    const res = await fetch(`${p.url}${path}`, { headers: { authorization: `Bearer ${p.token}` } })
    const body = await res.text()
    const ms = performance.now() - t0
    expect(res.status).toBe(200)
    if (ms < best.ms) best = { ms, body }
  }
  return best
}

test('with 100,000 nodes GET /api/v1/overview answers within 1 s, small, with the seeded figures', async () => {
  const overview = await timed('/api/v1/overview')
  const nodesPage = await timed('/api/v1/overview/nodes?limit=50')
  process.stderr.write(`overview with ${COUNT} nodes: ${overview.ms.toFixed(0)} ms, ${overview.body.length} bytes; first node page ${nodesPage.ms.toFixed(0)} ms (load ${(await Bun.file('/proc/loadavg').text()).split(' ')[0]})\n`)
  expect(overview.ms).toBeLessThan(1000)
  expect(nodesPage.ms).toBeLessThan(1000)
  expect(overview.body.length).toBeLessThan(10_000) // aggregated: no per-node rows

  const o = JSON.parse(overview.body) as FleetOverview
  expect(o.nodes.counts).toEqual(expected)
  expect(o.nodes.counts).toEqual((await p.client.nodes.list({ limit: 1 })).counts)
  expect(o.nodes.capacity).toEqual({ cpuMillis: expected.ready * SEEDED.cpuMillis, memoryMB: expected.ready * SEEDED.memoryMB })
  expect(o.nodes.used).toEqual({ cpuMillis: PROJECT.replicas * PROJECT.cpu, memoryMB: PROJECT.replicas * PROJECT.memory })
  expect(o.replicas).toEqual({ desired: PROJECT.replicas, placed: PROJECT.replicas, running: 0, shortfall: 0 })
  const hb = o.nodes.heartbeats
  expect({ recent: hb.within15s + hb.within1m + hb.within5m, older: hb.older, never: hb.never }).toEqual({ recent: expected.ready, older: expected.unreachable, never: expected.enrolled })
  expect(o.projects!.attention.map((x) => [x.name, x.desired, x.running])).toEqual([[PROJECT.name, PROJECT.replicas, 0]])

  const first = JSON.parse(nodesPage.body) as { nodes: { name: string; replicas: { placed: number } }[]; nextCursor: string }
  expect(first.nodes.map((n) => n.name)).toEqual(names.slice(0, 50))
  const second = await p.client.overview.nodes({ limit: 50, cursor: first.nextCursor })
  expect(second.nodes.map((n) => n.name)).toEqual(names.slice(50, 100))
  // Every placed replica is on a node of the listing: summed over the unreachable filter's pages too (none there).
  const unreachable = await p.client.overview.nodes({ state: 'unreachable', limit: 5000 })
  expect(unreachable.nodes.every((n) => n.replicas.placed === 0)).toBe(true)
}, 120_000)

/** Clicks the Overview tab in the page and waits there for the total and the first 50 node rows; the milliseconds in between. */
function timedOpen(): Promise<number> {
  return page.evaluate(
    () =>
      new Promise<number>((resolve, reject) => {
        const t0 = performance.now()
        ;(document.querySelector('button[data-panel=overview]') as HTMLElement).click()
        const check = () => {
          if (document.querySelectorAll('tr[data-fleet-node]').length === 50 && document.querySelector('[data-stat="nodes.total"]')?.textContent === '100,000') resolve(performance.now() - t0)
          else if (performance.now() - t0 > 30_000) reject(new Error('the overview did not show within 30 s'))
          else requestAnimationFrame(check)
        }
        check()
      }),
  )
}

test('the page shows the figures within 1 s and pages the nodes 50 at a time', async () => {
  const stat = (key: string) => page.locator(`#panel-overview [data-stat="${key}"]`)
  await stat('nodes.total').waitFor()
  const times: number[] = []
  for (let i = 0; i < 3 && !times.some((t) => t < 1000); i++) {
    await page.locator('#tabs').getByRole('button', { name: 'Nodes', exact: true }).click()
    await page.locator('#panel-overview').waitFor({ state: 'hidden' })
    times.push(await timedOpen())
  }
  process.stderr.write(`overview page with ${COUNT} nodes: figures and first node page in ${times.map((t) => t.toFixed(0)).join(', ')} ms\n`)
  expect(Math.min(...times)).toBeLessThan(1000)
  expect(await stat('nodes.total').textContent()).toBe('100,000')
  for (const s of ['ready', 'unreachable', 'enrolled', 'revoked'] as const) expect(Number(await stat(`nodes.${s}`).getAttribute('data-value'))).toBe(expected[s])
  expect(Number(await stat('cpu.capacity').getAttribute('data-value'))).toBe(expected.ready * SEEDED.cpuMillis)
  const rows = () => page.locator('#panel-overview tr[data-fleet-node]').evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-fleet-node')))
  await page.locator(`#panel-overview tr[data-fleet-node="${names[0]}"]`).waitFor()
  expect(await rows()).toEqual(names.slice(0, 50))
  await page.locator('#panel-overview').getByRole('button', { name: 'Next page' }).click()
  await page.locator(`#panel-overview tr[data-fleet-node="${names[50]}"]`).waitFor()
  expect(await rows()).toEqual(names.slice(50, 100))
  await page.locator('#panel-overview').getByRole('button', { name: 'Previous page' }).click()
  await page.locator(`#panel-overview tr[data-fleet-node="${names[0]}"]`).waitFor()
  await page.getByRole('combobox', { name: 'Show fleet nodes in state' }).selectOption('unreachable')
  const unreachable = names.filter((_, i) => KINDS[i % KINDS.length] === 'unreachable').slice(0, 50)
  await waitFor(async () => JSON.stringify(await rows()) === JSON.stringify(unreachable), { what: 'the unreachable nodes only', timeoutMs: 30_000 })
  expect(errors).toEqual([])
}, 120_000)
