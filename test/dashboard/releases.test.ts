// The Releases page (docs/upgrading.md), in headless Chromium against a real
// Platform with simulated nodes: a halted rollout shows its reason, progress
// per group, the failing node with its error and the nodes updating now; a
// superadmin resumes, pauses and cancels it with the buttons and each change
// is on the Platform; a viewer sees the same without buttons, and the calls
// the buttons make, sent from its page anyway, are refused. Nothing sticks out
// of the window at 1400 or 420 px; screenshots go to /tmp/muster-releases-*.png.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Browser, Page } from 'playwright-core'
import { hashPassword } from '../../src/auth/auth.ts'
import { insertAccount } from '../../src/store/accounts.ts'
import { VERSION } from '../../src/version.ts'
import { startPlatform, type TestPlatform } from '../helpers/platform.ts'
import { fakeRelease, SimNode } from '../helpers/sim-nodes.ts'
import { tmpDir, waitFor } from '../helpers/tmp.ts'
import { launch, logIn, newPage, SLOW, superadminPassword } from './_fleet.ts'

let browser: Browser
let p: TestPlatform
let rollout: string
const errors: string[] = []
const dir = tmpDir('muster-releases-page-')

/** Elements past the window's right edge that no scrolling box holds, and the page's own width. */
function overflow(page: Page) {
  return page.evaluate(() => {
    const width = document.documentElement.clientWidth
    const clipped = (el: Element) => {
      for (let a = el.parentElement; a && a !== document.body; a = a.parentElement) if (['auto', 'scroll', 'hidden'].includes(getComputedStyle(a).overflowX)) return true
      return false
    }
    const out = [...document.querySelectorAll('body *')].filter((el) => {
      const r = el.getBoundingClientRect()
      return r.width > 0 && r.height > 0 && r.right > width + 1 && !clipped(el)
    }).map((el) => `${el.tagName.toLowerCase()}.${el.className}`)
    return { width, scrollWidth: document.documentElement.scrollWidth, out: out.slice(0, 5) }
  })
}

beforeAll(async () => {
  browser = await launch()
  p = await startPlatform({ remoteDispatch: true })
  const rel = await fakeRelease(p, dir.path, '0.0.5')
  await fakeRelease(p, dir.path, VERSION, rel.key)
  const nodes = await Promise.all(['rack1-worker-01', 'rack1-worker-02', 'rack1-worker-03', 'rack2-worker-01', 'rack2-worker-02', 'edge-arm-01'].map((n, i) => new SimNode(p, n, '0.0.5', { rack: i < 3 ? 'rack1' : i < 5 ? 'rack2' : 'edge' }).enroll()))
  for (const n of nodes) {
    await n.facts()
    await n.beat()
  }
  nodes[3]!.play = 'rolled-back'
  const r = await p.client.rollouts.start({ version: VERSION, maxUnavailable: '2', canaries: 3 })
  rollout = r.id
  // Play it until it halts on the failed canary, one other canary updating (told, silent).
  nodes[5]!.play = 'silent'
  const keys = (await p.client.releases.list()).keys.map((k) => ({ kid: k.kid, publicKey: k.publicKey }))
  const trust = async () => (await p.client.nodes.trust()).trustKeys
  await waitFor(async () => {
    await Promise.all(nodes.map((n) => n.round(trust, keys, 0, p.platform.now)))
    return (await p.client.rollouts.status(rollout)).state === 'halted'
  }, { timeoutMs: 30_000, what: 'the rollout halted' })
  await insertAccount(p.platform.store, { name: 'vera', role: 'viewer', passwordHash: await hashPassword('viewer-pass-1'), now: Date.now() })
}, 120_000)

afterAll(async () => {
  await browser?.close()
  await p?.close()
  dir[Symbol.dispose]()
})

const tab = (page: Page) => page.locator('#tabs').getByRole('button', { name: 'Releases', exact: true }).click()

describe('the Releases page', () => {
  for (const width of [1400, 420]) {
    test(`at ${width} px: the halted rollout with its reason, groups, the failing node and its error, the releases and keys`, SLOW, async () => {
      const { ctx, page } = await newPage(browser, errors, width)
      await logIn(page, p.url, 'superadmin', superadminPassword(p))
      await tab(page)
      const card = page.locator(`[data-rollout="${rollout}"]`)
      await card.waitFor()
      expect(await card.getAttribute('data-state')).toBe('halted')
      expect(await card.textContent()).toContain(`canary rack2-worker-01 rolled-back: the new Agent did not heartbeat at 0.1.0 within 60 s`)
      expect(await page.locator('tr[data-group]').count()).toBe(3)
      const failing = page.locator('tr[data-rollout-node="rack2-worker-01"]')
      expect(await failing.textContent()).toContain('the new Agent did not heartbeat')
      expect(await page.locator('tr[data-rollout-node="edge-arm-01"]').textContent()).toContain('downloading')
      expect(await page.locator('tr[data-release]').count()).toBe(2)
      expect(await page.locator('tr[data-key]').count()).toBe(1)
      expect(await overflow(page)).toEqual({ width, scrollWidth: width, out: [] })
      if (width < 700) expect(await page.locator('.table-wrap:visible').evaluateAll((els) => els.filter((el) => el.scrollWidth > el.clientWidth + 1).length)).toBe(0)
      await page.screenshot({ path: `/tmp/muster-releases-${width}.png`, fullPage: true })
      await ctx.close()
      expect(errors).toEqual([])
    })
  }

  test('a superadmin resumes, pauses and cancels with the buttons; each is on the Platform', SLOW, async () => {
    const { ctx, page } = await newPage(browser, errors)
    await logIn(page, p.url, 'superadmin', superadminPassword(p))
    await tab(page)
    await page.getByRole('button', { name: 'Resume anyway' }).click()
    await page.getByText(`Rollout ${rollout} is running.`).waitFor()
    expect((await p.client.rollouts.status(rollout)).state).toBe('running')
    await page.getByRole('button', { name: 'Pause', exact: true }).click()
    await page.getByText(`Rollout ${rollout} is paused.`).waitFor()
    expect((await p.client.rollouts.status(rollout)).state).toBe('paused')
    await page.locator('.rollout-actions').getByRole('button', { name: 'Cancel', exact: true }).click()
    await page.locator('dialog').getByRole('button', { name: 'Keep it' }).click()
    expect((await p.client.rollouts.status(rollout)).state).toBe('paused')
    await page.locator('.rollout-actions').getByRole('button', { name: 'Cancel', exact: true }).click()
    await page.locator('dialog').getByRole('button', { name: 'Cancel the rollout' }).click()
    await page.getByText(`Rollout ${rollout} is cancelled.`).waitFor()
    expect((await p.client.rollouts.status(rollout)).state).toBe('cancelled')
    expect(await page.locator('.rollout-actions').count()).toBe(0)
    await ctx.close()
    expect(errors).toEqual([])
  })

  test('a viewer reads the page without the buttons; the calls they make, from its page, are refused', SLOW, async () => {
    const r = await p.client.rollouts.start({ version: VERSION, selector: ['rack=rack1'] })
    const { ctx, page } = await newPage(browser, errors)
    await logIn(page, p.url, 'vera', 'viewer-pass-1')
    await tab(page)
    await page.locator(`[data-rollout="${r.id}"]`).waitFor()
    await page.getByText('Read-only: steering rollouts needs permission server.releases.manage.').waitFor()
    for (const name of ['Pause', 'Resume', 'Cancel']) expect(await page.getByRole('button', { name, exact: true }).count()).toBe(0)
    const statuses = await page.evaluate(async (id) => Promise.all(['pause', 'cancel'].map(async (a) => (await fetch(`/api/v1/rollouts/${id}/${a}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })).status)), r.id)
    expect(statuses).toEqual([403, 403])
    expect((await p.client.rollouts.status(r.id)).state).toBe('running')
    await ctx.close()
    expect(errors).toEqual([])
  })
})
