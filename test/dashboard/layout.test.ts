// Every dashboard page at 420 px (a phone) and at 1400 px, in headless
// Chromium against a real Platform with a small fleet (long names, a halted
// rollout, audit entries with markup in them, a provider connected at the
// Hetzner fake): nothing sticks out of the window (no element past its right
// edge outside a box that scrolls, no page wider than the window), on the
// narrow screen tables are cards, not boxes to scroll sideways, and text from
// outside stays text. The login page with an identity provider's button comes
// from a second Platform signing in with a real OpenID provider. Screenshots
// of each page go to $MUSTER_TEST_SCREENS_DIR when it is set (look at them
// after a layout change).
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { Browser, Page } from 'playwright-core'
import { hashPassword } from '../../src/auth/auth.ts'
import { cloudOf } from '../../src/cloud/service.ts'
import { insertAccount } from '../../src/store/accounts.ts'
import { VERSION } from '../../src/version.ts'
import { FAST_RETRY } from '../cloud/_ctx.ts'
import { startHetznerFake, type HetznerFake } from '../fakes/hetzner.ts'
import { startOidcProvider, type OidcProviderHandle } from '../helpers/oidc-provider.ts'
import { startPlatform, type TestPlatform } from '../helpers/platform.ts'
import { fakeRelease, SimNode } from '../helpers/sim-nodes.ts'
import { tmpDir, waitFor } from '../helpers/tmp.ts'
import { beat, enrollNode, launch, logIn, newPage, reportPlaced, SLOW, superadminPassword } from './_fleet.ts'

const SCREENS = process.env.MUSTER_TEST_SCREENS_DIR
const CAPACITY = { cpuMillis: 2000, memoryMB: 4096 }
/** The longest node name there is (63 characters): tables and cards must hold it. */
const LONG_NODE = 'rack9-worker-with-a-name-as-long-as-a-node-name-may-ever-get-01'
/** Markup an identity provider chose (a subject): the audit shows it as text. */
const MARKUP = '<img src=x onerror=alert(1)>'
let browser: Browser
let p: TestPlatform
let sso: TestPlatform
let op: OidcProviderHandle
let hz: HetznerFake
let rollout: string
const errors: string[] = []
const dir = tmpDir('muster-layout-')

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
  await insertAccount(p.platform.store, { name: 'margaret.hamilton-longname@engineering.example.com', role: 'operator', passwordHash: null, origin: 'sso', now: Date.now() })
  // The entry a sign-in with an identity provider writes: the subject is the provider's to choose (src/sso/signin.ts)
  await p.platform.audit.record({ principal: 'margaret.hamilton-longname@engineering.example.com', kind: 'session' }, { source: '127.0.0.1', action: 'sso.login', target: 'margaret.hamilton-longname@engineering.example.com', outcome: 'ok', detail: `role=operator sub=${MARKUP} iss=https://login.engineering.example.com/realms/a-long-realm-name` })

  // Releases: two signed releases, and a rollout halted by a canary that rolled back, another updating
  const old = await fakeRelease(p, dir.path, '0.0.5')
  await fakeRelease(p, dir.path, VERSION, old.key)
  const sims = await Promise.all([LONG_NODE, 'edge-arm-01', 'edge-arm-02'].map((n, i) => new SimNode(p, n, '0.0.5', { zone: i === 0 ? 'eu-central-with-a-long-zone-name' : 'edge' }).enroll()))
  for (const n of sims) {
    await n.facts()
    await n.beat()
  }
  sims[0]!.play = 'rolled-back'
  sims[1]!.play = 'silent'
  rollout = (await p.client.rollouts.start({ version: VERSION, maxUnavailable: '2', canaries: 2 })).id
  const keys = (await p.client.releases.list()).keys.map((k) => ({ kid: k.kid, publicKey: k.publicKey }))
  const trust = async () => (await p.client.nodes.trust()).trustKeys
  await waitFor(async () => {
    await Promise.all(sims.map((n) => n.round(trust, keys, 0, p.platform.now)))
    return (await p.client.rollouts.status(rollout)).state === 'halted'
  }, { timeoutMs: 30_000, what: 'the rollout halted' })

  // Providers and machines: Hetzner (its fake) connected, so the wizard has regions and sizes
  hz = startHetznerFake()
  const cloud = cloudOf(p.platform)
  cloud.endpoints.hetzner = hz.url
  cloud.binary = { url: 'https://releases.example/muster-linux-x64', sha256: 'ab'.repeat(32) }
  cloud.retry = FAST_RETRY
  await p.client.cloud.connect('hetzner', hz.token)

  // A second Platform that signs people in with an OpenID provider: its login page has the button
  const port = await freePort()
  op = await startOidcProvider({ users: {}, clients: [{ clientId: 'muster', clientSecret: 'layout-client-secret-0123456789', redirectUris: [`http://127.0.0.1:${port}/auth/oidc/callback`] }] })
  const secret = join(dir.path, 'oidc-secret')
  writeFileSync(secret, 'layout-client-secret-0123456789\n')
  chmodSync(secret, 0o600)
  sso = await startPlatform({ port, oidc: { issuer: op.issuer, clientId: 'muster', clientSecretFile: secret, roleMap: 'admins=superadmin', displayName: 'Acme Corporation Single Sign-On' } })
}, 180_000)

afterAll(async () => {
  await browser?.close()
  await p?.close()
  await sso?.close()
  await op?.close()
  await hz?.stop()
  dir[Symbol.dispose]()
})

async function freePort(): Promise<number> {
  const probe = Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { data() {} } })
  const port = probe.port
  probe.stop(true)
  return port
}

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

/** Table boxes that scroll sideways: none at either width (at 420 px the tables are cards; at 1400 px every column fits). */
const scrollingTables = (page: Page) => page.locator('.table-wrap:visible').evaluateAll((els) => els.filter((el) => el.scrollWidth > el.clientWidth + 1).length)

async function check(page: Page, width: number, name: string) {
  await page.evaluate(() => document.fonts.ready)
  const o = await overflow(page)
  expect({ page: name, ...o, out: o.out.slice(0, 5) }).toEqual({ page: name, width, scrollWidth: width, out: [] })
  expect({ page: name, scrollingTables: await scrollingTables(page) }).toEqual({ page: name, scrollingTables: 0 })
  // on the narrow screen a table is cards: its header row is gone, each cell says its column
  if (width < 700) expect({ page: name, headers: await page.locator('.table-wrap thead:visible').count() }).toEqual({ page: name, headers: 0 })
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

    test('releases and the halted rollout, accounts, the audit, the add-machine wizard of a provider', SLOW, async () => {
      const { ctx, page } = await newPage(browser, errors, width)
      await logIn(page, p.url, 'superadmin', superadminPassword(p))

      await tab(page, 'Releases')
      await page.locator(`[data-rollout="${rollout}"][data-state="halted"]`).waitFor()
      await page.locator(`tr[data-rollout-node="${LONG_NODE}"]`).waitFor()
      await check(page, width, 'releases')

      await tab(page, 'Accounts')
      await page.locator('tr[data-account="vera"]').waitFor()
      await check(page, width, 'accounts')

      await tab(page, 'Audit')
      await page.locator('#panel-audit tr[data-entry]').first().waitFor()
      // the markup is shown as it was typed, and made no element
      await page.locator('#panel-audit').getByText(MARKUP).first().waitFor()
      expect(await page.locator('#panel-audit img').count()).toBe(0)
      await check(page, width, 'audit')

      await tab(page, 'Providers and machines')
      await page.locator('#panel-cloud tr[data-provider="hetzner"]').getByText('connected', { exact: true }).waitFor()
      await page.locator('#panel-cloud').getByRole('button', { name: 'Add a machine' }).click()
      const wizard = page.getByRole('dialog', { name: 'Add a machine' })
      await wizard.getByLabel('Provider').selectOption('hetzner')
      await waitFor(async () => (await wizard.getByLabel('Region').locator('option').count()) > 1, { what: 'the regions' })
      await wizard.getByLabel('Region').selectOption('fsn1')
      await waitFor(async () => (await wizard.getByLabel('Size').locator('option').count()) > 1, { what: 'the sizes' })
      await wizard.getByLabel('Size').selectOption('cx32')
      await check(page, width, 'cloud-wizard')
      await wizard.getByRole('button', { name: 'Cancel' }).click()
      await ctx.close()
      expect(errors).toEqual([])
    })

    test('the login page of a Platform with an identity provider: its button beside the password form', SLOW, async () => {
      const { ctx, page } = await newPage(browser, errors, width)
      await page.goto(sso.url)
      await page.locator('#sso-login').waitFor()
      expect(await page.locator('#sso-login').textContent()).toBe('Sign in with Acme Corporation Single Sign-On')
      expect(await page.locator('#login-form input[name=password]').isVisible()).toBe(true)
      await check(page, width, 'login-sso')
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
