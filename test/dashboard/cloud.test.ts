// The dashboard's Providers and machines page in headless Chromium against a
// real Platform with its enrollment listener and the Hetzner fake: connect
// (a password field, a refusal shown, the secret never in the page), the
// add-machine wizard (provider → region → size with its monthly price →
// name → role), and the scale-out card (consent, max machines, cooldown).
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core'
import { cloudOf } from '../../src/cloud/service.ts'
import { startHetznerFake, type HetznerFake } from '../fakes/hetzner.ts'
import { startListenerPlatform, type ListenerPlatform } from '../helpers/node-side.ts'
import { waitFor } from '../helpers/tmp.ts'
import { FAST_RETRY } from '../cloud/_ctx.ts'

const CHROMIUM = '/usr/bin/chromium'
const ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync']
/** Each Chromium step on a shared 2-core machine. */
const STEP_MS = 30_000

let browser: Browser
let p: ListenerPlatform
let hz: HetznerFake
const contexts: BrowserContext[] = []
const pageErrors: string[] = []

/** The wizard and the scale-out card need a connected provider: the first test connects it through the page; a test run alone connects it here. */
async function hetznerConnected(): Promise<void> {
  if (!(await p.client.cloud.status()).providers.find((x) => x.provider === 'hetzner')?.connected) await p.client.cloud.connect('hetzner', hz.token)
}

async function signedIn(): Promise<Page> {
  const ctx = await browser.newContext()
  ctx.setDefaultTimeout(STEP_MS)
  contexts.push(ctx)
  const page = await ctx.newPage()
  page.on('pageerror', (e) => pageErrors.push(e.message))
  page.on('console', (m) => {
    if (/Content Security Policy/i.test(m.text())) pageErrors.push(m.text())
  })
  await page.goto(p.url)
  await page.locator('#login-form input[name=identifier]').fill('superadmin')
  await page.locator('#login-form input[name=password]').fill(readFileSync(join(p.dataDir, 'platform/initial-superadmin-password'), 'utf8').trim())
  await page.locator('#login-form button[type=submit]').click()
  await page.locator('#who').getByText('superadmin').waitFor()
  await page.getByRole('button', { name: 'Providers and machines' }).click()
  return page
}

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install -y chromium`)
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ARGS, timeout: STEP_MS })
  hz = startHetznerFake()
  p = await startListenerPlatform()
  const cloud = cloudOf(p.platform)
  cloud.endpoints.hetzner = hz.url
  cloud.binary = { url: 'https://releases.example/muster-linux-x64', sha256: 'ab'.repeat(32) }
  cloud.retry = FAST_RETRY
}, 60_000)

afterAll(async () => {
  for (const ctx of contexts) await ctx.close().catch(() => {})
  await browser?.close()
  await p?.close()
  await hz?.stop()
})

describe('dashboard: Providers and machines', () => {
  test('connect: the credential goes in a password field, a refusal is shown, and it is never shown again', { timeout: 120_000 }, async () => {
    const page = await signedIn()
    const row = page.locator('#panel-cloud tr[data-provider="hetzner"]')
    await row.getByText('not connected').waitFor()
    await row.getByRole('button', { name: 'Connect' }).click()
    const dialog = page.getByRole('dialog', { name: 'Connect hetzner' })
    const field = dialog.getByLabel('hetzner credentials')
    expect(await field.getAttribute('type')).toBe('password')
    await field.fill('not-the-token')
    await dialog.getByRole('button', { name: 'Connect hetzner' }).click()
    await dialog.getByText('hetzner refused the credentials (401 unauthorized: unable to authenticate)').waitFor()
    expect((await p.client.cloud.status()).providers[0]!.connected).toBe(false)
    await field.fill(hz.token)
    await dialog.getByRole('button', { name: 'Connect hetzner' }).click()
    await row.getByText('connected', { exact: true }).waitFor()
    expect(await page.getByRole('dialog').count()).toBe(0)
    expect((await p.client.cloud.status()).providers[0]).toMatchObject({ provider: 'hetzner', connected: true, connectedBy: 'superadmin' })
    // nowhere in the page, nor in any input's value
    expect(await page.content()).not.toContain(hz.token)
    expect(await page.evaluate((t) => [...document.querySelectorAll('input')].some((i) => i.value.includes(t)), hz.token)).toBe(false)
    expect((await p.client.cloud.audit()).entries[0]).toMatchObject({ action: 'connect', principal: 'superadmin', via: 'session', outcome: 'ok' })
    expect(pageErrors).toEqual([])
  })

  test('add a machine: provider → region → size with its monthly price → name → role', { timeout: 120_000 }, async () => {
    await hetznerConnected()
    const page = await signedIn()
    await page.locator('#panel-cloud tr[data-provider="hetzner"]').getByText('connected', { exact: true }).waitFor()
    await page.getByRole('button', { name: 'Add a machine' }).click()
    const dialog = page.getByRole('dialog', { name: 'Add a machine' })
    expect(await dialog.getByRole('button', { name: 'Create machine' }).isDisabled()).toBe(true)
    await dialog.getByLabel('Provider').selectOption('hetzner')
    await dialog.getByLabel('Region').locator('option[value="fsn1"]').waitFor({ state: 'attached' })
    await dialog.getByLabel('Region').selectOption('fsn1')
    const size = dialog.getByLabel('Size')
    await size.locator('option[value="cx22"]').waitFor({ state: 'attached' })
    // only what the binary runs on, with Hetzner's gross monthly price in euros; no Arm type, nothing deprecated here
    const offered = await size.locator('option').evaluateAll((os) => os.map((o) => (o as HTMLOptionElement).value).filter(Boolean))
    expect(offered).toEqual(['cx22', 'cx32'])
    expect(await size.locator('option[value="cx22"]').textContent()).toBe('cx22 — 2 CPU, 4096 MB, 40 GB disk — 4.51 EUR per month')
    await size.selectOption('cx32')
    await dialog.getByLabel('Name').fill('dash-1')
    await dialog.getByLabel('Role').selectOption('build')
    await dialog.getByRole('button', { name: 'Create machine' }).click()
    const machine = page.locator('#panel-cloud tr[data-machine="dash-1"]')
    await machine.waitFor()
    expect(await machine.textContent()).toContain('hetzner fsn1 cx32')
    expect(await machine.textContent()).toContain('build')
    expect(hz.book.created.map((m) => [m.name, m.size, m.labels['muster-role']])).toEqual([['dash-1', 'cx32', 'build']])
    const prv = (await p.client.cloud.provisions()).provisions.find((x) => x.name === 'dash-1')!
    expect(prv).toMatchObject({ requestedBy: 'superadmin', role: 'build', inbound: { agentFrom: null, sshFrom: null } })
    // and release it from the same page
    await machine.getByRole('button', { name: 'Release' }).click()
    await page.getByRole('dialog').getByRole('button', { name: 'Release dash-1' }).click()
    await waitFor(async () => (await p.client.cloud.provisionInfo(prv.id)).state === 'released', { what: 'released' })
    expect(hz.book.machines.size).toBe(0)
    expect(pageErrors).toEqual([])
  })

  test('scale-out card: consent, max machines, cooldown and what to order', { timeout: 120_000 }, async () => {
    await hetznerConnected()
    const page = await signedIn()
    const card = page.locator('#panel-cloud form.scaling')
    await card.waitFor()
    expect(await page.locator('#panel-cloud .scaling-state').textContent()).toContain('Off')
    expect(await card.getByRole('checkbox').isChecked()).toBe(false)
    // consent without saying what to order is refused, and shown
    await card.getByRole('checkbox').check()
    await card.getByRole('button', { name: 'Save scale-out' }).click()
    await page.locator('#panel-cloud').getByText('give provider, region and size').waitFor()
    expect((await p.client.cloud.scaling()).enabled).toBe(false)
    await card.getByLabel('Order at').selectOption('hetzner')
    await card.getByLabel('Order in region').locator('option[value="nbg1"]').waitFor({ state: 'attached' })
    await card.getByLabel('Order in region').selectOption('nbg1')
    await card.getByLabel('Order size').locator('option[value="cx22"]').waitFor({ state: 'attached' })
    await card.getByLabel('Order size').selectOption('cx22')
    await card.getByLabel('Max machines').fill('3')
    await card.getByLabel('Cooldown (minutes)').fill('20')
    await card.getByRole('checkbox').check()
    await card.getByRole('button', { name: 'Save scale-out' }).click()
    await page.locator('#panel-cloud .scaling-state').getByText('On: at most 3 machine(s), one per 20 min, hetzner nbg1 cx22 (general).').waitFor()
    expect(await p.client.cloud.scaling()).toMatchObject({ enabled: true, maxMachines: 3, cooldownMinutes: 20, provider: 'hetzner', region: 'nbg1', size: 'cx22' })
    expect((await p.client.cloud.audit()).entries[0]).toMatchObject({ action: 'scaling', principal: 'superadmin', via: 'session' })
    // and off again
    await page.locator('#panel-cloud form.scaling').getByRole('checkbox').uncheck()
    await page.locator('#panel-cloud form.scaling').getByRole('button', { name: 'Save scale-out' }).click()
    await page.locator('#panel-cloud .scaling-state').getByText('Off: the Platform orders nothing by itself.').waitFor()
    expect((await p.client.cloud.scaling()).enabled).toBe(false)
    expect(pageErrors).toEqual([])
  })
})
