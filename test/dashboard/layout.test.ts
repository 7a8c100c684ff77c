// Every dashboard page at 420 px (a phone) and at 1400 px, in headless
// Chromium against a real Platform with a small fleet: nothing sticks out of
// the window (no element past its right edge outside a box that scrolls, no
// page wider than the window), and on the narrow screen tables are cards, not
// boxes to scroll sideways. Screenshots of each page go to
// $MUSTER_TEST_SCREENS_DIR when it is set (look at them after a layout change).
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import type { Browser, Page } from 'playwright-core'
import { hashPassword } from '../../src/auth/auth.ts'
import { insertAccount } from '../../src/store/accounts.ts'
import { startPlatform, type TestPlatform } from '../helpers/platform.ts'
import { waitFor } from '../helpers/tmp.ts'
import { beat, enrollNode, launch, logIn, newPage, reportPlaced, SLOW, superadminPassword } from './_fleet.ts'

const SCREENS = process.env.MUSTER_TEST_SCREENS_DIR
const CAPACITY = { cpuMillis: 2000, memoryMB: 4096 }
let browser: Browser
let p: TestPlatform
const errors: string[] = []

beforeAll(async () => {
  if (SCREENS) mkdirSync(SCREENS, { recursive: true })
  browser = await launch()
  p = await startPlatform({ remoteDispatch: true, enrollmentPort: 0, enrollmentAddresses: ['127.0.0.1'], enrollmentHost: '127.0.0.1', logWaitMs: 2_000 })
  const nodes = [await enrollNode(p, 'rack1-worker-01'), await enrollNode(p, 'rack1-worker-02'), await enrollNode(p, 'rack2-worker-01')]
  await enrollNode(p, 'rack2-worker-02') // enrolled, never heartbeats
  const gone = await enrollNode(p, 'old-builder')
  for (const n of [...nodes, gone]) await beat(p, n, CAPACITY)
  await p.client.nodes.revoke(gone.name)
  await p.client.projects.deploy({ name: 'web', replicas: 3, cpu: 500, memory: 512, env: { DATABASE_PASSWORD: 'hunter2-secret', MODE: 'production' }, command: ['/usr/bin/python3', '-m', 'http.server', '8080', '--bind', '0.0.0.0', '--directory', '/srv/www/a-rather-long-directory-name'] })
  await p.client.projects.deploy({ name: 'queue-worker', replicas: 2, cpu: 250, memory: 256, command: ['/opt/queue/bin/worker', '--concurrency=4'] })
  await p.client.projects.deploy({ name: 'batch', replicas: 2, cpu: 1500, memory: 1024, command: ['/opt/batch/run'] })
  await reportPlaced(p, nodes, CAPACITY, ['queue-worker/1'])
  await p.client.nodes.createJoinToken({ label: 'rack 3', maxUses: 10, namePattern: 'rack3-*' })
  await insertAccount(p.platform.store, { name: 'vera', role: 'viewer', passwordHash: await hashPassword('viewer-pass-1'), now: Date.now() })
}, 120_000)

afterAll(async () => {
  await browser?.close()
  await p?.close()
})

/** Elements past the window's right edge that no scrolling box holds, and the page's own width. */
function overflow(page: Page) {
  return page.evaluate(() => {
    const width = document.documentElement.clientWidth
    const clipped = (el: Element) => {
      for (let a = el.parentElement; a && a !== document.body; a = a.parentElement) {
        const o = getComputedStyle(a).overflowX
        if (o === 'auto' || o === 'scroll' || o === 'hidden') return true
      }
      return false
    }
    const out = [...document.querySelectorAll('body *')]
      .filter((el) => {
        const r = el.getBoundingClientRect()
        return r.width > 0 && r.height > 0 && r.right > width + 1 && !clipped(el)
      })
      .map((el) => `${el.tagName.toLowerCase()}${el.id ? '#' + el.id : ''}.${el.className} (right ${Math.round(el.getBoundingClientRect().right)})`)
    return { width, scrollWidth: document.documentElement.scrollWidth, out }
  })
}

/** Table boxes that scroll sideways (at 420 px the tables are cards and must not). */
const scrollingTables = (page: Page) => page.locator('.table-wrap:visible').evaluateAll((els) => els.filter((el) => el.scrollWidth > el.clientWidth + 1).length)

async function check(page: Page, width: number, name: string) {
  await page.evaluate(() => document.fonts.ready)
  const o = await overflow(page)
  expect({ page: name, ...o, out: o.out.slice(0, 5) }).toEqual({ page: name, width, scrollWidth: width, out: [] })
  if (width < 700) expect(await scrollingTables(page)).toBe(0)
  if (SCREENS) await screenshots(page, width, name)
}

/** The whole page, and for a narrow one the same in pieces a screen high (easier to look at). */
async function screenshots(page: Page, width: number, name: string) {
  await page.screenshot({ path: join(SCREENS!, `${name}-${width}.png`), fullPage: true })
  if (width >= 700) return
  const height = await page.evaluate(() => document.documentElement.scrollHeight)
  for (let y = 0, i = 1; y < height; y += 900, i++) {
    await page.screenshot({ path: join(SCREENS!, `${name}-${width}-part${i}.png`), fullPage: true, clip: { x: 0, y, width, height: Math.min(900, height - y) } })
  }
}

const tab = (page: Page, name: string) => page.locator('#tabs').getByRole('button', { name, exact: true }).click()

for (const width of [420, 1400]) {
  describe(`at ${width} px`, () => {
    test('the login page, the overview, nodes, add a machine, projects, a project, the deploy form, offices, providers', SLOW, async () => {
      const { ctx, page } = await newPage(browser, errors, width)
      await page.goto(p.url)
      await page.locator('#login-form').waitFor()
      await check(page, width, 'login')
      await logIn(page, p.url, 'superadmin', superadminPassword(p))

      await page.locator('#panel-overview [data-stat="nodes.total"]').waitFor()
      await page.locator('#panel-overview tr[data-fleet-node="rack1-worker-01"]').waitFor()
      await page.locator('#panel-overview tr[data-attention]').first().waitFor()
      await check(page, width, 'overview')

      await tab(page, 'Nodes')
      await page.locator('#panel-nodes tr[data-node="rack1-worker-01"]').waitFor()
      await page.locator('#panel-nodes tr[data-token]').waitFor()
      await check(page, width, 'nodes')
      await page.getByRole('button', { name: 'Add a machine' }).click()
      await page.locator('input[name=nodeId]').fill(`rack3-worker-${width}`)
      await page.getByRole('button', { name: 'Issue join command' }).click()
      await page.locator('dialog .join-command').waitFor()
      await check(page, width, 'add-machine')
      await page.locator('dialog').getByRole('button', { name: 'Done' }).click()
      await page.locator('dialog').waitFor({ state: 'detached' })

      await tab(page, 'Projects')
      await page.locator('#panel-projects tr[data-project="web"]').waitFor()
      await check(page, width, 'projects')

      await page.getByRole('button', { name: 'Deploy a project' }).click()
      await page.locator('dialog form.deploy-form').waitFor()
      await check(page, width, 'deploy-form')
      await page.locator('dialog').getByRole('button', { name: 'Cancel' }).click()
      await page.locator('dialog').waitFor({ state: 'detached' })

      await page.locator('#panel-projects tr[data-project="web"]').getByRole('button', { name: 'web' }).click()
      await page.locator('[data-project-page="web"]').waitFor()
      await page.getByRole('button', { name: 'Show logs' }).click()
      await page.locator('#panel-projects .logs-out :is(.notice, pre, p)').waitFor()
      await check(page, width, 'project')

      await tab(page, 'Offices')
      await page.getByText('No offices.').waitFor()
      await check(page, width, 'offices')

      await tab(page, 'Providers and machines')
      await page.locator('#panel-cloud tr[data-provider]').first().waitFor()
      await check(page, width, 'cloud')
      await ctx.close()
      expect(errors).toEqual([])
    })

    test('a viewer: the overview and a project, read-only', SLOW, async () => {
      const { ctx, page } = await newPage(browser, errors, width)
      await logIn(page, p.url, 'vera', 'viewer-pass-1')
      await page.locator('#panel-overview [data-stat="nodes.total"]').waitFor()
      await check(page, width, 'viewer-overview')
      await tab(page, 'Projects')
      await page.locator('#panel-projects tr[data-project="web"]').getByRole('button', { name: 'web' }).click()
      await page.locator('[data-project-page="web"]').waitFor()
      await waitFor(async () => (await page.locator('#panel-projects .env').textContent())?.includes('DATABASE_PASSWORD=***'), { what: 'the masked env' })
      await check(page, width, 'viewer-project')
      await ctx.close()
      expect(errors).toEqual([])
    })
  })
}
