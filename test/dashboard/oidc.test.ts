// Sign-in with the identity provider in headless Chromium, through
// dist/muster and a real provider (oidc-provider in this process): the button
// beside the password form, the provider's login page, back signed in with the
// role the groups map to; a user with no mapped group is told it was refused.
// Screenshots of the login page at 1400 and 420 px land in /tmp/muster-sso-*.png.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { existsSync } from 'node:fs'
import { chromium, type Browser, type Page } from 'playwright-core'
import { startOidcPlatform, type OidcPlatform } from '../helpers/oidc-fixture.ts'

const CHROMIUM = '/usr/bin/chromium'
const ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync']
const SLOW = { timeout: 150_000 }

let browser: Browser
let p: OidcPlatform
const pageErrors: string[] = []

async function newPage(width = 1400): Promise<Page> {
  const ctx = await browser.newContext({ viewport: { width, height: 900 } })
  ctx.setDefaultTimeout(30_000)
  const page = await ctx.newPage()
  page.on('pageerror', (e) => pageErrors.push(e.message))
  return page
}

async function signInAtProvider(page: Page, login: string, password: string) {
  await page.goto(p.url)
  await page.locator('#sso-login').click()
  await page.locator('#op-login').fill(login)
  await page.locator('#op-password').fill(password)
  await page.locator('#op-submit').click()
}

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install -y chromium`)
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ARGS, timeout: 30_000 })
  p = await startOidcPlatform()
})
afterAll(async () => {
  await browser?.close()
  await p?.close()
})

test('the login page offers "Sign in with Example SSO" beside the password form (1400 and 420 px)', SLOW, async () => {
  for (const width of [1400, 420]) {
    const page = await newPage(width)
    await page.goto(p.url)
    const button = page.locator('#sso-login')
    await button.waitFor()
    expect(await button.textContent()).toBe('Sign in with Example SSO')
    expect(await page.locator('#sso-or').isVisible()).toBe(true)
    expect(await page.locator('#login-form input[name=password]').isVisible()).toBe(true)
    // Nothing overflows the narrow screen.
    expect(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth)).toBe(true)
    await page.screenshot({ path: `/tmp/muster-sso-login-${width}.png` })
    await page.context().close()
  }
})

test('click, sign in at the provider, land signed in with the mapped role', SLOW, async () => {
  const page = await newPage()
  await signInAtProvider(page, 'bob', 'bob-pass')
  await page.locator('#who').getByText('bob@example.com').waitFor()
  expect(await page.locator('#who').textContent()).toContain('(operator)')
  expect(new URL(page.url()).pathname).toBe('/')
  // An ordinary muster session: the API answers with it.
  expect(await page.evaluate(async () => (await (await fetch('/api/v1/whoami')).json()).role)).toBe('operator')
  await page.context().close()
})

test('a user with no mapped group comes back to the login page, told it was refused', SLOW, async () => {
  const page = await newPage()
  await signInAtProvider(page, 'carol', 'carol-pass')
  const message = page.locator('#login-message')
  await message.waitFor()
  expect(await message.textContent()).toContain('Sign-in with the identity provider was refused')
  expect(new URL(page.url()).search).toBe('')
  await page.context().close()
})

test('under --oidc-only the login page offers the provider alone', SLOW, async () => {
  const only = await startOidcPlatform({ extra: ['--oidc-only', '--oidc-display-name', 'Acme Okta'] })
  try {
    const page = await newPage(420)
    await page.goto(only.url)
    await page.locator('#sso-login').waitFor()
    expect(await page.locator('#sso-login').textContent()).toBe('Sign in with Acme Okta')
    expect(await page.locator('#login-form input[name=password]').isVisible()).toBe(false)
    expect(await page.locator('#password-login').isVisible()).toBe(false)
    expect(await page.locator('#sso-or').isVisible()).toBe(false)
    await page.screenshot({ path: '/tmp/muster-sso-only-420.png' })
    await page.context().close()
  } finally {
    await only.close()
  }
})

test('no page error on the way', () => {
  expect(pageErrors).toEqual([])
})
