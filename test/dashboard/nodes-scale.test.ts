// The dashboard's Nodes page at fleet size: with 100,000 registered
// nodes it shows the first page and the counts by state within 1 s, pages
// forward and back, searches by name prefix and filters by state, in headless
// Chromium against a real Platform. Chromium steps get 30 s (two busy cores);
// the 1 s is measured inside the page, from the click to the rendered page.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { chromium, type Browser, type Page } from 'playwright-core'
import { seedNodes, type SeedKind } from '../helpers/seed-nodes.ts'
import { startPlatform, type TestPlatform } from '../helpers/platform.ts'
import { waitFor } from '../helpers/tmp.ts'

const CHROMIUM = '/usr/bin/chromium'
const ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync']
const COUNT = 100_000
// Seeded 'ready' nodes were seen when seeded and 'unreachable' ones an hour before: ready for 30 minutes, however slow the machine.
const STALE_MS = 30 * 60_000
const KINDS: SeedKind[] = ['ready', 'ready', 'ready', 'unreachable', 'enrolled', 'revoked', 'ready', 'ready']
const names = Array.from({ length: COUNT }, (_, i) => `node-${String(i).padStart(6, '0')}`)

let browser: Browser
let p: TestPlatform
let page: Page
const pageErrors: string[] = []

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install -y chromium`)
  const first = await startPlatform({ remoteDispatch: true, keepDir: true, nodeStaleAfterMs: STALE_MS })
  await seedNodes(first.platform.store, names, (i) => KINDS[i % KINDS.length]!)
  await first.close()
  p = await startPlatform({ remoteDispatch: true, dataDir: first.dataDir, nodeStaleAfterMs: STALE_MS })
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ARGS, timeout: 30_000 })
  const ctx = await browser.newContext()
  ctx.setDefaultTimeout(30_000)
  page = await ctx.newPage()
  page.on('pageerror', (e) => pageErrors.push(e.message))
  await page.goto(p.url)
  await page.locator('#login-form input[name=identifier]').fill('superadmin')
  await page.locator('#login-form input[name=password]').fill(readFileSync(join(p.dataDir, 'platform/initial-superadmin-password'), 'utf8').trim())
  await page.locator('#login-form button[type=submit]').click()
  await page.locator('#who').getByText('superadmin').waitFor()
}, 180_000)

afterAll(async () => {
  await browser?.close()
  await p?.close()
})

/** Clicks the Nodes tab in the page and waits there for `rows` node rows and the total count; the milliseconds in between. */
function timedOpen(rows: number, total: string): Promise<number> {
  return page.evaluate(
    ({ rows, total }) =>
      new Promise<number>((resolve, reject) => {
        const t0 = performance.now()
        ;(document.querySelector('button[data-panel=nodes]') as HTMLElement).click()
        const check = () => {
          if (document.querySelectorAll('tr[data-node]').length === rows && document.querySelector('[data-count=total]')?.textContent === total) resolve(performance.now() - t0)
          else if (performance.now() - t0 > 30_000) reject(new Error('the first page did not show within 30 s'))
          else requestAnimationFrame(check)
        }
        check()
      }),
    { rows, total },
  )
}

const rows = () => page.locator('tr[data-node]').evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-node')))
const expected = { total: COUNT, ready: 0, unreachable: 0, enrolled: 0, revoked: 0 }
names.forEach((_, i) => expected[KINDS[i % KINDS.length] as keyof typeof expected]++)

test('with 100,000 nodes the Nodes page shows its first page and the counts by state within 1 s', async () => {
  // Leave the panel, then open it again: the click starts the measured load. The best of three
  // opens counts (other processes share these two cores; a slow page is slow every time).
  const times: number[] = []
  for (let i = 0; i < 3 && !times.some((t) => t < 1000); i++) {
    await page.getByRole('button', { name: 'Projects' }).click()
    await page.locator('#panel-nodes').waitFor({ state: 'hidden' })
    times.push(await timedOpen(100, expected.total.toLocaleString('en')))
  }
  process.stderr.write(`nodes page with ${COUNT} nodes: first page and counts in ${times.map((t) => t.toFixed(0)).join(', ')} ms (load ${(await Bun.file('/proc/loadavg').text()).split(' ')[0]})\n`)
  expect(Math.min(...times)).toBeLessThan(1000)
  expect(await rows()).toEqual(names.slice(0, 100))
  for (const s of ['ready', 'unreachable', 'enrolled', 'revoked'] as const) {
    expect(await page.locator(`[data-count=${s}]`).textContent()).toBe(expected[s].toLocaleString('en'))
  }
  expect(pageErrors).toEqual([])
}, 120_000)

test('pages forward and back, searches by name prefix, filters by state', async () => {
  await page.getByRole('button', { name: 'Next page' }).click()
  await page.locator(`tr[data-node="${names[100]}"]`).waitFor()
  expect(await rows()).toEqual(names.slice(100, 200))
  await page.getByRole('button', { name: 'Next page' }).click()
  await page.locator(`tr[data-node="${names[200]}"]`).waitFor()
  await page.getByRole('button', { name: 'Previous page' }).click()
  await page.locator(`tr[data-node="${names[100]}"]`).waitFor()
  expect(await rows()).toEqual(names.slice(100, 200))

  await page.getByRole('searchbox', { name: 'Search nodes by name' }).fill('node-0421')
  await page.locator('tr[data-node="node-042100"]').waitFor()
  expect(await rows()).toEqual(names.filter((n) => n.startsWith('node-0421')).slice(0, 100))
  expect(await page.locator('[data-count=total]').textContent()).toBe('100')

  const revoked = names.filter((n, i) => n.startsWith('node-0421') && KINDS[i % KINDS.length] === 'revoked')
  await page.getByRole('combobox', { name: 'Show nodes in state' }).selectOption('revoked')
  // revoked[1] is on the unfiltered page too: wait for the filtered table itself.
  await waitFor(async () => JSON.stringify(await rows()) === JSON.stringify(revoked), { what: 'the revoked nodes only', timeoutMs: 30_000 })
  expect(await rows()).toEqual(revoked)
  expect(await page.locator('#panel-nodes td.state').evaluateAll((tds) => tds.every((td) => td.textContent?.includes('revoked')))).toBe(true)

  await page.getByRole('searchbox', { name: 'Search nodes by name' }).fill('nobody')
  await page.getByText('No node matches.').waitFor()
  expect(pageErrors).toEqual([])
}, 120_000)
