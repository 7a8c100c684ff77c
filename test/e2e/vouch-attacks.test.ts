// Vouches and vouched sessions under attack, through dist/muster (a real
// controller and a real office) and a real Chromium (docs/federation.md):
// - login CSRF: a page on another site navigated a browser to the office's
//   vouch link and the browser came back signed in as the attacker; now the
//   link shows a page that spends nothing, and a vouch posted from elsewhere
//   is refused. The honest way (open the link, press the button) still works.
// - a HEAD of the link spent the vouch and set the cookie, unaudited;
// - a vouched session outlived `admin detach`, a rotated token and a revoke;
// - a vouched session planted a back door (an account with a password, a
//   30-day join token, an enrollment); now it makes nothing that outlives it.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Browser } from 'playwright-core'
import { launch } from '../dashboard/_fleet.ts'
import { freePort } from '../federation/_helpers.ts'
import { runMuster, startMuster, startServe, type Daemon } from '../helpers/binary.ts'
import { tmpDir, waitFor } from '../helpers/tmp.ts'

const FAST = { MUSTER_FEDERATION_HEARTBEAT_SECONDS: '0.2' }

describe('vouches through dist/muster', () => {
  const dir = tmpDir()
  const cDir = `${dir.path}/controller`
  const oDir = `${dir.path}/office-a`
  let controller: Awaited<ReturnType<typeof startServe>>
  let office: Daemon | undefined
  let port: number
  let officeUrl: string
  let env: { MUSTER_URL: string; MUSTER_TOKEN: string }
  let mallory: { MUSTER_URL: string; MUSTER_TOKEN: string }
  let browser: Browser

  const onController = async (args: string[], as = env) => {
    const r = await runMuster(args, { env: as })
    if (r.code !== 0) throw new Error(`muster ${args.join(' ')}: ${r.stderr}`)
    return r.stdout
  }
  const vouch = async (as = env) => JSON.parse(await onController(['federation', 'vouch', 'office-a', '--json'], as)) as { vouch: string; redeemUrl: string }
  /** The office as `muster serve`: joined with `token` on its first start, from its stored membership after. */
  const startOffice = async (token?: string) => {
    office = await startMuster(['serve', '--data-dir', oDir, '--port', String(port)], {
      env: { ...FAST, ...(token ? { MUSTER_CONTROLLER_URL: controller.url, MUSTER_ADVERTISE_URL: officeUrl, MUSTER_JOIN_TOKEN: token } : {}) },
    })
    await office.waitForLog(/listening on/)
  }
  const connected = () => waitFor(async () => (JSON.parse(await onController(['federation', 'offices', '--json'])) as { offices: { fresh: boolean }[] }).offices[0]?.fresh, { what: 'office-a fresh', timeoutMs: 20_000 })
  /** Redeems a vouch the way the CLI's JSON route does (no browser): the session cookie. */
  const redeem = async (v: string) => {
    const res = await fetch(`${officeUrl}/api/office/vouch`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ vouch: v }) })
    expect(res.status).toBe(200)
    return res.headers.get('set-cookie')!.split(';')[0]!
  }
  const asSession = (cookie: string, path: string, init: RequestInit = {}) => fetch(`${officeUrl}${path}`, { ...init, headers: { cookie, 'content-type': 'application/json', origin: officeUrl } })
  const whoami = async (cookie: string) => (await asSession(cookie, '/api/v1/whoami')).status

  beforeAll(async () => {
    controller = await startServe(cDir, [], FAST)
    const admin = JSON.parse((await runMuster(['admin', 'api-token', '--data-dir', cDir, '--account', 'superadmin', '--json'])).stdout) as { token: string }
    env = { MUSTER_URL: controller.url, MUSTER_TOKEN: admin.token }
    // mallory: an operator on the controller, who would sign other people's browsers in as herself
    await runMuster(['accounts', 'add', 'mallory', '--role', 'operator'], { env, stdin: 'mallory-password-1\n' })
    const m = JSON.parse((await runMuster(['admin', 'api-token', '--data-dir', cDir, '--account', 'mallory', '--role', 'operator', '--json'])).stdout) as { token: string }
    mallory = { MUSTER_URL: controller.url, MUSTER_TOKEN: m.token }
    port = await freePort()
    officeUrl = `http://127.0.0.1:${port}`
    await startOffice((JSON.parse(await onController(['federation', 'mint', 'office-a', '--json'])) as { token: string }).token)
    await connected()
    browser = await launch()
  }, 120_000)

  afterAll(async () => {
    await browser?.close()
    await office?.stop()
    await controller?.stop()
    dir[Symbol.dispose]()
  })

  test('login CSRF: a page on another site cannot sign a browser in with its vouch; the honest link and button still can', { timeout: 150_000 }, async () => {
    const bait = (await vouch(mallory)).vouch
    const posted = (await vouch(mallory)).vouch
    const postedJson = (await vouch(mallory)).vouch
    // The attacker's site: another host name (localhost, not 127.0.0.1), so every request from it is cross-site.
    const pages: Record<string, string> = {
      '/navigate': `<script>location.href = ${JSON.stringify(`${officeUrl}/office/vouch?v=${encodeURIComponent(bait)}`)}</script>`,
      '/form': `<form id="f" method="post" action="${officeUrl}/office/vouch"><input type="hidden" name="v" value="${posted}"></form><script>document.getElementById('f').submit()</script>`,
      '/form-api': `<form id="f" method="post" action="${officeUrl}/api/office/vouch"><input type="hidden" name="vouch" value="${postedJson}"></form><script>document.getElementById('f').submit()</script>`,
    }
    await using evil = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: (r) => new Response(pages[new URL(r.url).pathname] ?? 'no', { headers: { 'content-type': 'text/html' } }) })
    const evilUrl = `http://localhost:${evil.port}`
    const ctx = await browser.newContext()
    ctx.setDefaultTimeout(30_000)
    const page = await ctx.newPage()
    const officeCookies = async () => (await ctx.cookies(officeUrl)).filter((c) => c.name === 'muster_session')
    try {
      // 1. a navigation to the link: the office shows what the vouch would do, and nothing more
      await page.goto(`${evilUrl}/navigate`)
      await page.getByText('The controller vouches for').waitFor()
      expect(page.url()).toContain('/office/vouch')
      expect(await page.getByRole('button', { name: 'Sign in as mallory' }).isVisible()).toBe(true)
      expect(await officeCookies()).toEqual([])
      // 2. a form posted from the other site to the redemption, in either shape: refused, no cookie
      for (const path of ['/form', '/form-api']) {
        const [answer] = await Promise.all([page.waitForResponse((r) => r.url().startsWith(officeUrl)), page.goto(`${evilUrl}${path}`)])
        expect(answer.status()).toBe(403)
        expect(await officeCookies()).toEqual([])
      }
      // none of the three vouches was spent: mallory could still use each herself
      for (const v of [bait, posted, postedJson]) await redeem(v)

      // 3. the honest way: the person opens their own link, presses the button, and is signed in as themselves
      const mine = await vouch()
      await page.goto(mine.redeemUrl)
      await page.getByRole('button', { name: 'Sign in as superadmin' }).click()
      await page.waitForURL(`${officeUrl}/`)
      expect(await page.evaluate(async () => (await (await fetch('/api/v1/whoami')).json()) as { account: string })).toMatchObject({ account: 'superadmin', kind: 'session', role: 'superadmin' })
      expect(await officeCookies()).toHaveLength(1)
    } finally {
      await ctx.close()
    }
  })

  test('a HEAD of the link spends nothing and sets no cookie; the vouch then works once', { timeout: 60_000 }, async () => {
    const v = await vouch()
    const head = await fetch(v.redeemUrl, { method: 'HEAD', redirect: 'manual' })
    expect(head.headers.get('set-cookie')).toBeNull()
    expect(head.status).toBe(200)
    await redeem(v.vouch)
    const again = await fetch(`${officeUrl}/api/office/vouch`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ vouch: v.vouch }) })
    expect(again.status).toBe(409)
  })

  test('a vouched session makes nothing that outlives it: no account, role, join token, enrollment, API token or cloud credential', { timeout: 60_000 }, async () => {
    const su = await redeem((await vouch()).vouch)
    const tries: [string, string, unknown][] = [
      ['POST', '/api/v1/accounts', { name: 'ops-backup', role: 'superadmin', password: 'a-long-backdoor-password' }],
      ['POST', '/api/v1/join-tokens', { maxUses: 1_000_000, ttlMinutes: 43_200 }],
      ['POST', '/api/v1/nodes/enrollments', { nodeId: 'rogue-1' }],
      ['POST', '/api/v1/nodes/ghost/rebind', {}],
      ['POST', '/api/v1/api-tokens', {}],
      ['POST', '/api/v1/cloud/connections', { provider: 'hetzner', credentials: { token: 'x'.repeat(64) } }],
      ['POST', '/api/v1/federation/join-tokens', { officeId: 'sub-office' }],
    ]
    for (const [method, path, body] of tries) {
      const res = await asSession(su, path, { method, body: JSON.stringify(body) })
      expect([path, res.status]).toEqual([path, 403])
      expect(await res.text()).not.toMatch(/mjt_|mat_|mof1/)
    }
    // it may still take access away: demote, disable, remove (the office's own accounts stay the office's)
    const local = JSON.parse((await runMuster(['admin', 'api-token', '--break-glass', '--data-dir', oDir, '--json'])).stdout) as { token: string }
    const asLocal = (path: string, body: unknown) => fetch(`${officeUrl}${path}`, { method: 'POST', headers: { authorization: `Bearer ${local.token}`, 'content-type': 'application/json' }, body: JSON.stringify(body) })
    expect((await asLocal('/api/v1/accounts', { name: 'olga', role: 'operator', password: 'olga-password-long' })).status).toBe(200)
    expect((await asSession(su, '/api/v1/accounts/olga/role', { method: 'POST', body: '{"role":"superadmin"}' })).status).toBe(403)
    expect((await asSession(su, '/api/v1/accounts/olga/role', { method: 'POST', body: '{"role":"viewer"}' })).status).toBe(200)
    expect((await asSession(su, '/api/v1/accounts/olga/disable', { method: 'POST', body: '{}' })).status).toBe(200)
    expect((await asSession(su, '/api/v1/accounts/olga/enable', { method: 'POST', body: '{}' })).status).toBe(403)
    const accounts = ((await (await asSession(su, '/api/v1/accounts')).json()) as { accounts: { name: string; role: string; disabled: boolean }[] }).accounts
    expect(accounts.map((a) => a.name).sort()).toEqual(['mallory', 'olga', 'superadmin']) // mallory: her own vouches made her account; no ops-backup
    expect(accounts.find((a) => a.name === 'olga')).toMatchObject({ role: 'viewer', disabled: true })
    const joinTokens = ((await (await asSession(su, '/api/v1/join-tokens')).json()) as { tokens: unknown[] }).tokens
    expect(joinTokens).toEqual([])
  })

  test('a vouched session ends with the membership: detach, a rotated token, a revoke', { timeout: 150_000 }, async () => {
    // 1. detach (the office's host leaves the controller): the session vouched under it is over
    const s0 = await redeem((await vouch()).vouch)
    expect(await whoami(s0)).toBe(200)
    await office!.stop()
    expect((await runMuster(['admin', 'detach', '--data-dir', oDir])).code).toBe(0)
    await startOffice()
    expect(await whoami(s0)).toBe(401)

    // the honest way back: a new token, joined again, and a vouch works again
    await office!.stop()
    await startOffice((JSON.parse(await onController(['federation', 'mint', 'office-a', '--rotate', '--json'])) as { token: string }).token)
    await connected()
    const s1 = await redeem((await vouch()).vouch)
    expect(await whoami(s1)).toBe(200)

    // 2. the controller rotates the office's token: the office hears "refused", and the session ends within a heartbeat
    const rotated = (JSON.parse(await onController(['federation', 'mint', 'office-a', '--rotate', '--json'])) as { token: string }).token
    await waitFor(async () => (await whoami(s1)) === 401, { what: 'the vouched session to end after the rotate', timeoutMs: 20_000 })

    // 3. joined again with the rotated token, then revoked: the session ends as well, and no vouch opens another
    await office!.stop()
    expect((await runMuster(['admin', 'detach', '--data-dir', oDir])).code).toBe(0)
    await startOffice(rotated)
    await connected()
    const early = (await vouch()).vouch // minted before the revoke: valid for 120 s, yet the office refuses it once it has heard
    const s2 = await redeem((await vouch()).vouch)
    expect(await whoami(s2)).toBe(200)
    await onController(['federation', 'revoke', 'office-a'])
    await waitFor(async () => (await whoami(s2)) === 401, { what: 'the vouched session to end after the revoke', timeoutMs: 20_000 })
    const late = await fetch(`${officeUrl}/api/office/vouch`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ vouch: early }) })
    expect(late.status).toBe(403)
    expect(((await late.json()) as { error: { code: string } }).error.code).toBe('federation-token-revoked')
    // break-glass still opens the office's own door (the honest way in without the controller)
    const bg = JSON.parse((await runMuster(['admin', 'api-token', '--break-glass', '--data-dir', oDir, '--json'])).stdout) as { token: string }
    expect((await fetch(`${officeUrl}/api/v1/whoami`, { headers: { authorization: `Bearer ${bg.token}` } })).status).toBe(200)
  })
})
