// The dashboard in headless Chromium against real Platforms on loopback: a
// controller with an enrollment listener and an office joined to it. Every
// click goes through the same JSON API as the SDK, with the session cookie.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core'
import { hashPassword } from '../../src/auth/auth.ts'
import { insertAccount } from '../../src/store/accounts.ts'
import { VERSION } from '../../src/version.ts'
import { startOffice } from '../federation/_helpers.ts'
import { enrollRaw, newCert } from '../helpers/certs.ts'
import { startPlatform, type TestPlatform } from '../helpers/platform.ts'
import { waitFor } from '../helpers/tmp.ts'
import { startHetznerFake } from '../fakes/hetzner.ts'
import { cloudOf } from '../../src/cloud/service.ts'

const CHROMIUM = '/usr/bin/chromium'
const ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync']
const XSS = '<img src=x onerror="window.__xss=1">'
const SCREENSHOT = '/tmp/muster-dashboard.png'
/** Several Chromium steps of up to 30 s each: a test gets more than the default minute on a loaded machine. */
const SLOW = { timeout: 150_000 }

let browser: Browser
let p: TestPlatform
const contexts: BrowserContext[] = []
const cleanups: (() => Promise<void>)[] = []

const password = (dataDir: string) => readFileSync(join(dataDir, 'platform/initial-superadmin-password'), 'utf8').trim()

async function newPage(): Promise<Page> {
  const ctx = await browser.newContext()
  ctx.setDefaultTimeout(30_000) // Chromium on 2 busy cores can take seconds per step; a missing element still fails within the test's minute
  contexts.push(ctx)
  const page = await ctx.newPage()
  page.on('pageerror', (e) => pageErrors.push(e.message))
  page.on('console', (m) => {
    if (/Content Security Policy/i.test(m.text())) pageErrors.push(m.text())
  })
  return page
}
/** Script errors and CSP violations seen on any page: there must be none. */
const pageErrors: string[] = []

/** Logs in on the Nodes page (the dashboard opens on the Overview otherwise). */
async function logIn(page: Page, url: string, identifier: string, secret: string) {
  await page.goto(`${url}/#nodes`)
  await page.locator('#login-form input[name=identifier]').fill(identifier)
  await page.locator('#login-form input[name=password]').fill(secret)
  await page.locator('#login-form button[type=submit]').click()
}

async function enrollNode(name: string, token: string) {
  const { certPem } = await newCert(name)
  return enrollRaw(p.url, { token, nodeId: name, certPem, version: VERSION })
}

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install -y chromium`)
  // A fresh profile (--user-data-dir in a temp dir) is made by Playwright for each launch and removed on close.
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ARGS, timeout: 30_000 })
  p = await startPlatform({ remoteDispatch: true, enrollmentPort: 0, enrollmentAddresses: ['127.0.0.1'], enrollmentHost: '127.0.0.1' })
  const first = await p.client.nodes.createEnrollment({ nodeId: 'worker-1' })
  expect((await enrollNode('worker-1', first.token)).status).toBe(200)
  await p.client.nodes.createEnrollment({ nodeId: 'worker-2' })
  await p.client.nodes.createJoinToken({ label: XSS, maxUses: 3 })
})

afterAll(async () => {
  for (const ctx of contexts) await ctx.close().catch(() => {})
  await browser?.close()
  for (const fn of cleanups.reverse()) await fn()
  await p?.close()
})

describe('dashboard', () => {
  test('the page is served with a strict CSP, no framing, and unknown /api paths stay JSON 404', SLOW, async () => {
    const res = await fetch(`${p.url}/`)
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toContain('text/html')
    const csp = res.headers.get('content-security-policy') ?? ''
    expect(csp).toContain("frame-ancestors 'none'")
    expect(csp).toContain("script-src 'self'")
    expect(csp).not.toContain('unsafe-inline')
    expect(res.headers.get('x-frame-options')).toBe('DENY')
    const html = await res.text()
    expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/) // no inline script
    expect(html).not.toMatch(/\sstyle=|<style/)
    const js = await fetch(`${p.url}/ui/app.js`)
    expect(js.headers.get('content-type')).toContain('javascript')
    expect(js.headers.get('x-content-type-options')).toBe('nosniff')
    expect((await fetch(`${p.url}/ui/nope.js`)).status).toBe(404)
    const api404 = await fetch(`${p.url}/api/v1/nope`)
    expect(api404.status).toBe(404)
    expect(await api404.json()).toMatchObject({ error: { code: 'not-found' } })
  })

  test('a wrong password shows the refusal; the right one shows nodes, pending enrollments and labels as text', SLOW, async () => {
    const page = await newPage()
    await logIn(page, p.url, 'superadmin', 'not-the-password')
    await page.locator('#login-message').getByText('Login refused').waitFor()
    expect(await page.locator('#app-view').isVisible()).toBe(false)

    await logIn(page, p.url, 'superadmin', password(p.dataDir))
    await page.locator('#who').getByText('superadmin').waitFor()
    const worker1 = page.locator('tr[data-node="worker-1"]')
    await worker1.waitFor()
    expect(await worker1.locator('td.state').textContent()).toContain('enrolled')
    expect(await page.locator('tr[data-node="local"]').count()).toBe(0) // no local node unless serve --local-node
    await page.locator('tr[data-pending="worker-2"]').waitFor()
    // The label holds markup: it shows as text and nothing runs.
    const label = page.locator('tr[data-token] td.label')
    await label.waitFor()
    expect(await label.textContent()).toBe(XSS)
    expect(await page.locator('tr[data-token] img').count()).toBe(0)
    expect(await page.evaluate(() => (window as unknown as { __xss?: number }).__xss)).toBeUndefined()
    await page.screenshot({ path: SCREENSHOT, fullPage: true })
    expect(pageErrors).toEqual([])
  })

  test('Add a machine shows the join command with the pin, the token beside it (never on the command line) once; closing it removes the token', SLOW, async () => {
    const page = await newPage()
    await page.context().grantPermissions(['clipboard-read', 'clipboard-write'], { origin: p.url })
    await logIn(page, p.url, 'superadmin', password(p.dataDir))
    await page.getByRole('button', { name: 'Add a machine' }).click()
    await page.locator('input[name=nodeId]').fill('worker-3')
    await page.getByRole('button', { name: 'Issue join command' }).click()
    const command = (await page.locator('dialog .join-command').textContent()) ?? ''
    const info = await p.client.nodes.platform()
    const token = (await page.locator('dialog .join-token').textContent()) ?? ''
    expect(token).toMatch(/^mjt_[a-z2-7]{16}\.[A-Za-z0-9_-]{43}$/)
    // The command reads the token at worker join's no-echo prompt (or from a file): it never holds it.
    expect(command).toBe(`muster worker join --platform-url ${info.enrollment!.url} --node-id worker-3 --platform-fingerprint ${info.enrollment!.fingerprint}`)
    expect(command).not.toContain(token.slice(4, 20))
    expect(info.enrollment!.fingerprint).toMatch(/^sha256:[0-9a-f]{64}$/)
    await page.getByRole('button', { name: 'Copy', exact: true }).click()
    await page.locator('dialog').getByText('Copied.').waitFor()
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(command)
    await page.getByRole('button', { name: 'Copy token' }).click()
    await waitFor(async () => (await page.evaluate(() => navigator.clipboard.readText())) === token, { what: 'the token copied' })

    await page.getByRole('button', { name: 'Done' }).click()
    await page.locator('dialog').waitFor({ state: 'detached' })
    await page.locator('tr[data-pending="worker-3"]').waitFor()
    const leftovers = await page.evaluate(() => [
      document.documentElement.outerHTML,
      ...[...document.querySelectorAll('input, textarea')].map((el) => (el as HTMLInputElement).value),
      JSON.stringify({ ...localStorage }),
      JSON.stringify({ ...sessionStorage }),
      location.href,
    ])
    for (const text of leftovers) expect(text).not.toContain(token.slice(4))
    // It was the real, single-use token for that name.
    expect((await enrollNode('worker-3', token)).status).toBe(200)
  })

  test('Revoke asks, then the node is revoked on the Platform and in the list', SLOW, async () => {
    const page = await newPage()
    await logIn(page, p.url, 'superadmin', password(p.dataDir))
    const row = page.locator('tr[data-node="worker-1"]')
    await row.getByRole('button', { name: 'Revoke' }).click()
    await page.locator('dialog').getByRole('button', { name: 'Revoke worker-1' }).click()
    await waitFor(async () => (await row.locator('td.state').textContent())?.includes('revoked'), { what: 'worker-1 shown revoked' })
    const nodes = await p.client.nodes.list()
    expect(nodes.nodes.find((n) => n.name === 'worker-1')?.state).toBe('revoked')
  })

  test('Remove asks; a healthy node is refused with its reason and offered force; newer and labels are shown', SLOW, async () => {
    const e = await p.client.nodes.createEnrollment({ nodeId: 'worker-5' })
    const { certPem } = await newCert('worker-5')
    const enrolled = await enrollRaw(p.url, { token: e.token, nodeId: 'worker-5', certPem, version: VERSION, labels: { role: 'build' } })
    const credential = ((await enrolled.json()) as { credential: string }).credential
    const newer = VERSION.replace(/^(\d+)\./, (_, major: string) => `${Number(major) + 1}.`)
    const hb = await fetch(`${p.url}/api/v1/nodes/register`, { method: 'POST', headers: { authorization: `Bearer ${credential}`, 'content-type': 'application/json' }, body: JSON.stringify({ version: newer }) })
    expect(hb.status).toBe(200)
    const page = await newPage()
    await logIn(page, p.url, 'superadmin', password(p.dataDir))
    const row = page.locator('tr[data-node="worker-5"]')
    await row.waitFor()
    expect(await row.locator('.badge.newer').textContent()).toBe('newer')
    expect(await row.locator('td.labels').textContent()).toContain('role=build')
    // Remove → confirm → refused as healthy → cancel: nothing changes
    await row.getByRole('button', { name: 'Remove' }).click()
    await page.locator('dialog').getByRole('button', { name: 'Remove worker-5' }).click()
    const offer = page.locator('dialog', { hasText: 'worker-5 is healthy' })
    await offer.waitFor()
    expect(await offer.textContent()).toContain('muster nodes revoke worker-5')
    await offer.getByRole('button', { name: 'Cancel' }).click()
    expect((await p.client.nodes.list()).nodes.some((n) => n.name === 'worker-5')).toBe(true)
    // again, forcing it this time
    await row.getByRole('button', { name: 'Remove' }).click()
    await page.locator('dialog').getByRole('button', { name: 'Remove worker-5' }).click()
    await page.locator('dialog').getByRole('button', { name: 'Force remove worker-5' }).click()
    await row.waitFor({ state: 'detached' })
    expect((await p.client.nodes.list()).nodes.some((n) => n.name === 'worker-5')).toBe(false)
    expect(pageErrors).toEqual([])
  })

  test('a viewer is told which permission it lacks, and nothing changes', SLOW, async () => {
    // its own node, so the test does not depend on the ones before it
    const e = await p.client.nodes.createEnrollment({ nodeId: 'worker-7' })
    expect((await enrollNode('worker-7', e.token)).status).toBe(200)
    await insertAccount(p.platform.store, { name: 'vera', role: 'viewer', passwordHash: await hashPassword('viewer-pass-1'), now: Date.now() })
    const page = await newPage()
    await logIn(page, p.url, 'vera', 'viewer-pass-1')
    await page.locator('#who').getByText('vera').waitFor()
    await page.getByText('You need permission server.nodes.manage to see the enrollment audit').waitFor()
    await page.getByRole('button', { name: 'Add a machine' }).click()
    await page.locator('input[name=nodeId]').fill('worker-9')
    await page.getByRole('button', { name: 'Issue join command' }).click()
    await page.getByText('You need permission server.nodes.enroll to add a machine').waitFor()
    await page.locator('tr[data-node="worker-7"]').getByRole('button', { name: 'Revoke' }).click()
    await page.locator('dialog').getByRole('button', { name: 'Revoke worker-7' }).click()
    await page.getByText('You need permission server.nodes.manage to revoke worker-7').waitFor()
    const nodes = await p.client.nodes.list()
    expect(nodes.nodes.find((n) => n.name === 'worker-7')?.state).not.toBe('revoked')
    expect(nodes.pendingEnrollments.map((e) => e.nodeId)).not.toContain('worker-9')
  })

  test('Projects shows replicas, placements and shortfall, commands as text', SLOW, async () => {
    await p.client.projects.deploy({ name: 'web', replicas: 2, command: ['echo', '<script>window.__xss=2</script>'] })
    const page = await newPage()
    await logIn(page, p.url, 'superadmin', password(p.dataDir))
    await page.getByRole('button', { name: 'Projects' }).click()
    const row = page.locator('tr[data-project="web"]')
    await row.waitFor()
    expect(await row.textContent()).toContain('0 / 2 running')
    expect(await row.locator('code').textContent()).toBe('echo <script>window.__xss=2</script>')
    expect(await page.locator('#panel-projects script').count()).toBe(0)
    expect(await page.evaluate(() => (window as unknown as { __xss?: number }).__xss)).toBeUndefined()
  })

  test('Providers and machines shows every provider and the machine counts; a build without cloud routes (404) says so', SLOW, async () => {
    const page = await newPage()
    await logIn(page, p.url, 'superadmin', password(p.dataDir))
    await page.locator('#who').getByText('superadmin').waitFor()
    const panel = page.locator('#panel-cloud')
    const res = await fetch(`${p.url}/api/v1/cloud/status`, { headers: { authorization: `Bearer ${p.token}` } })
    expect(res.status).toBe(200)
    const status = (await res.json()) as { providers: { provider: string }[]; machines: { total: number } }
    await page.getByRole('button', { name: 'Providers and machines' }).click()
    for (const { provider } of status.providers) await panel.locator(`tr[data-provider="${provider}"]`).waitFor()
    expect(await panel.locator('tr[data-provider]').count()).toBe(5)
    expect(await panel.textContent()).toContain(`${status.machines.total} machine(s)`)
    await panel.getByRole('heading', { name: 'Scale-out' }).waitFor()
    expect(await panel.getByText('Cloud providers are not available in this build.').count()).toBe(0)
    // A build without the cloud routes: the same panel, answered 404 by the Platform's JSON 404.
    await page.route('**/api/v1/cloud/status', (route) => route.fulfill({ status: 404, contentType: 'application/json', body: JSON.stringify({ error: { code: 'not-found', message: 'No such route.' } }) }))
    await panel.getByRole('button', { name: 'Refresh' }).click()
    await panel.getByText('Cloud providers are not available in this build.').waitFor()
    expect(await panel.locator('.error').count()).toBe(0)
  })

  test('Providers and machines lists the machines this Platform created; Release asks, then deletes', SLOW, async () => {
    await using hz = startHetznerFake()
    const cloud = cloudOf(p.platform)
    cloud.endpoints.hetzner = hz.url
    cloud.binary = { url: 'https://releases.example/muster-linux-x64', sha256: 'ab'.repeat(32) } // the fake never downloads it
    await p.client.cloud.connect('hetzner', hz.token)
    const made = await p.client.cloud.provision({ provider: 'hetzner', name: 'cloud-1', region: 'fsn1', size: 'cx22', role: 'general' })
    const page = await newPage()
    await logIn(page, p.url, 'superadmin', password(p.dataDir))
    await page.locator('#who').getByText('superadmin').waitFor()
    await page.getByRole('button', { name: 'Providers and machines' }).click()
    const row = page.locator('#panel-cloud tr', { hasText: 'cloud-1' })
    await row.waitFor()
    expect(await row.textContent()).toContain('hetzner fsn1 cx22')
    await row.getByRole('button', { name: 'Release' }).click()
    await page.getByRole('dialog').getByRole('button', { name: 'Release cloud-1' }).click()
    await waitFor(async () => (await page.locator('#panel-cloud tr', { hasText: 'cloud-1' }).locator('td').last().textContent()) === 'released', { what: 'the row marked released' })
    expect((await p.client.cloud.provisionInfo(made.id)).releasedAt).not.toBeNull()
    cleanups.push(async () => {
      await p.client.cloud.disconnect('hetzner').catch(() => {})
    })
  })

  test('Open office mints a vouch and opens the office signed in; the office refuses local login with its reason', SLOW, async () => {
    const { token } = await p.client.federation.mint({ officeId: 'office-a', label: '<b>HQ</b>' })
    const office = await startOffice(p.url, token)
    cleanups.push(() => office.close())
    await waitFor(async () => (await p.client.federation.offices()).offices.find((o) => o.officeId === 'office-a' && o.fresh), { what: 'office-a registered' })

    // The controller by name, the office by address: two sites, two cookie jars, as in real life.
    const page = await newPage()
    const controllerUrl = p.url.replace('127.0.0.1', 'localhost')
    await logIn(page, controllerUrl, 'superadmin', password(p.dataDir))
    await page.getByRole('button', { name: 'Offices' }).click()
    const row = page.locator('tr[data-office="office-a"]')
    expect(await row.locator('.label').textContent()).toBe('<b>HQ</b>')
    const [officePage] = await Promise.all([page.context().waitForEvent('page'), row.getByRole('button', { name: 'Open office' }).click()])
    // The link's page spends nothing until its button is pressed (a cross-site navigation alone signs no one in).
    await officePage.getByText('The controller vouches for').waitFor()
    await officePage.getByRole('button', { name: 'Sign in as superadmin' }).click()
    await officePage.locator('#who').getByText('superadmin').waitFor()
    expect(new URL(officePage.url()).port).toBe(new URL(office.url).port)
    expect(officePage.url()).not.toContain('vouch')
    // The office has no remote nodes: its Nodes page says how to turn them on.
    await officePage.locator('#tabs').getByRole('button', { name: 'Nodes', exact: true }).click()
    await officePage.getByText('muster serve --remote-dispatch').waitFor()
    await officePage.getByRole('button', { name: 'Offices' }).click()
    await officePage.getByText('No offices.').waitFor()

    const local = await newPage()
    await logIn(local, office.url, 'superadmin', password(office.dataDir))
    await local.getByText('Local password login is off on this Platform').waitFor()
    expect(await local.locator('#app-view').isVisible()).toBe(false)
  })

  test('Log out ends the session', SLOW, async () => {
    const page = await newPage()
    await logIn(page, p.url, 'superadmin', password(p.dataDir))
    await page.locator('#who').getByText('superadmin').waitFor()
    const cookie = (await page.context().cookies()).find((c) => c.name === 'muster_session')
    expect(cookie?.httpOnly).toBe(true)
    expect(cookie?.sameSite).toBe('Strict')
    await page.getByRole('button', { name: 'Log out' }).click()
    await page.getByText('You are logged out.').waitFor()
    const whoami = await fetch(`${p.url}/api/v1/whoami`, { headers: { cookie: `muster_session=${cookie!.value}` } })
    expect(whoami.status).toBe(401)
    expect(pageErrors).toEqual([])
  })
})
