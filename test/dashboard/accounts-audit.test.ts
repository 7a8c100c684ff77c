// In headless Chromium: the Accounts page (add a person, change a
// role, disable) and the Audit page (what those clicks wrote, filtered), for a
// superadmin, and the permission each one needs for anyone else. Screenshots
// at 1400 and 420 px wide land in /tmp/muster-teams-*.png.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { chromium, type Browser, type Page } from 'playwright-core'
import { startPlatform, type TestPlatform } from '../helpers/platform.ts'
import { waitFor } from '../helpers/tmp.ts'

const CHROMIUM = '/usr/bin/chromium'
const ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync']
const SLOW = { timeout: 150_000 }
const XSS = '<img src=x onerror="window.__xss=1">'

let browser: Browser
let p: TestPlatform
const pageErrors: string[] = []

async function signedIn(identifier: string, secret: string, width = 1400): Promise<Page> {
  const ctx = await browser.newContext({ viewport: { width, height: 900 } })
  ctx.setDefaultTimeout(30_000)
  const page = await ctx.newPage()
  page.on('pageerror', (e) => pageErrors.push(e.message))
  page.on('console', (m) => {
    if (/Content Security Policy/i.test(m.text())) pageErrors.push(m.text())
  })
  await page.goto(p.url)
  await page.locator('#login-form input[name=identifier]').fill(identifier)
  await page.locator('#login-form input[name=password]').fill(secret)
  await page.locator('#login-form button[type=submit]').click()
  await page.locator('#who').getByText(identifier).waitFor()
  return page
}

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install -y chromium`)
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ARGS, timeout: 30_000 })
  p = await startPlatform()
})

afterAll(async () => {
  await browser?.close()
  await p?.close()
})

describe('accounts and audit pages', () => {
  test('a superadmin adds a person, changes the role and disables; the audit page shows it, filtered', SLOW, async () => {
    const su = await signedIn('superadmin', readFileSync(join(p.dataDir, 'platform/initial-superadmin-password'), 'utf8').trim())
    await su.locator('#tabs button[data-panel=accounts]').click()
    const panel = su.locator('#panel-accounts')
    await panel.locator('tr[data-account=superadmin]').waitFor()
    const form = panel.locator('form[aria-label="Add an account"]')
    await form.locator('input[name=name]').fill('vera')
    await form.locator('select[name=role]').selectOption('viewer')
    await form.locator('input[name=password]').fill('vera-password-123')
    await form.locator('button[type=submit]').click()
    const vera = panel.locator('tr[data-account=vera]')
    await vera.waitFor()
    expect(await vera.locator('select.role').inputValue()).toBe('viewer')
    await vera.locator('select.role').selectOption('operator')
    await panel.getByText('vera is now operator').waitFor()
    expect((await p.client.accounts.list()).accounts.find((a) => a.name === 'vera')?.role).toBe('operator')
    await panel.locator('tr[data-account=vera] button', { hasText: 'Disable' }).click()
    await panel.locator('tr[data-account=vera]').getByText('disabled').waitFor()
    // the last superadmin: the Platform's refusal is shown, the role stays
    await panel.locator('tr[data-account=superadmin] select.role').selectOption('viewer')
    await panel.getByText('last superadmin').waitFor()
    expect(await panel.locator('tr[data-account=superadmin] select.role').inputValue()).toBe('superadmin')
    await su.screenshot({ path: '/tmp/muster-teams-accounts-1400.png', fullPage: true })

    // markup in a body never becomes markup in the audit (nor is it copied: it is no name)
    await p.client.projects.deploy({ name: XSS, command: ['x'], replicas: 0 } as never).catch(() => {})
    await su.locator('#tabs button[data-panel=audit]').click()
    const audit = su.locator('#panel-audit')
    await audit.locator('tr[data-entry]').first().waitFor()
    const actions = await audit.locator('tr[data-entry] td:nth-child(3)').allTextContents()
    for (const a of ['account.add', 'account.set-role', 'account.disable', 'login', 'project.deploy']) expect(actions).toContain(a)
    expect(await audit.locator('tr[data-entry]', { hasText: 'project.deploy' }).locator('td.target').textContent()).toBe('(not a name)')
    await audit.locator('input[name=action]').fill('account.set-role')
    await audit.locator('form.filters button[type=submit]').click()
    const filtered = await waitFor(async () => {
      const shown = await audit.locator('tr[data-entry] td:nth-child(3)').allTextContents()
      return shown.every((a) => a === 'account.set-role') && shown
    }, { what: 'the filtered page' })
    expect(filtered).toEqual(['account.set-role', 'account.set-role'])
    await su.screenshot({ path: '/tmp/muster-teams-audit-1400.png', fullPage: true })
    expect(await su.evaluate(() => (window as { __xss?: number }).__xss)).toBeUndefined()
  })

  test('at 420 px the pages fit; a viewer sees which permission each needs', SLOW, async () => {
    const su = await signedIn('superadmin', readFileSync(join(p.dataDir, 'platform/initial-superadmin-password'), 'utf8').trim(), 420)
    for (const tab of ['accounts', 'audit']) {
      await su.locator(`#tabs button[data-panel=${tab}]`).click()
      await su.locator(`#panel-${tab} table`).waitFor()
      // nothing wider than the screen but the tables' own scroller
      expect(await su.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(420)
      await su.screenshot({ path: `/tmp/muster-teams-${tab}-420.png`, fullPage: true })
    }
    await p.client.accounts.add({ name: 'viv', role: 'viewer', password: 'viv-password-1234' })
    const viewer = await signedIn('viv', 'viv-password-1234')
    await viewer.locator('#tabs button[data-panel=accounts]').click()
    await viewer.locator('#panel-accounts').getByText('You need permission server.accounts.manage to manage accounts.').waitFor()
    await viewer.locator('#tabs button[data-panel=audit]').click()
    await viewer.locator('#panel-audit').getByText('You need permission server.audit.view to read the audit.').waitFor()
    expect(pageErrors).toEqual([])
  })
})
