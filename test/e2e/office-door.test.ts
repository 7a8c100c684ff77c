// Through dist/muster: a superadmin token minted while the
// Platform was standalone kept working after it joined a controller, and
// minted new tokens there; a session opened during break-glass survived the
// re-join. Now local tokens and password sessions are suspended while the
// office's door is closed (401, the closed login's words), minting over the
// API is refused on a joined office, and a break-glass session ends when the
// door closes again. The federation flows with accounts for people (a
// vouch creates an account; break-glass refuses it; the identity write).
import { describe, expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { runMuster, startMuster, startServe, type Daemon } from '../helpers/binary.ts'
import { freePort, openVouchLink } from '../federation/_helpers.ts'
import { tmpDir, waitFor } from '../helpers/tmp.ts'

const FAST = { MUSTER_FEDERATION_HEARTBEAT_SECONDS: '0.2' }

describe("an office's closed door through dist/muster", () => {
  test('a token made before joining is suspended and cannot mint; a break-glass session ends when the door closes again', { timeout: 150_000 }, async () => {
    using dir = tmpDir()
    const cDir = `${dir.path}/controller`
    const oDir = `${dir.path}/office-a`
    await using controller = await startServe(cDir, [], FAST)
    const admin = (JSON.parse((await runMuster(['admin', 'api-token', '--data-dir', cDir, '--json'])).stdout) as { token: string }).token
    const onController = (args: string[]) => runMuster(args, { env: { MUSTER_URL: controller.url, MUSTER_TOKEN: admin } })
    const port = await freePort()
    const url = `http://127.0.0.1:${port}`
    const bearer = (token: string, path: string, init: RequestInit = {}) => fetch(`${url}${path}`, { ...init, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' } })
    const withCookie = (cookie: string, path: string) => fetch(`${url}${path}`, { headers: { cookie } })
    const login = async (password: string) => {
      const r = await fetch(`${url}/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ identifier: 'superadmin', password }) })
      return { status: r.status, cookie: r.headers.get('set-cookie')?.split(';')[0] ?? '' }
    }
    const startOffice = async (token?: string): Promise<Daemon> => {
      const d = await startMuster(['serve', '--data-dir', oDir, '--port', String(port)], { env: { ...FAST, MUSTER_CONTROLLER_URL: controller.url, MUSTER_ADVERTISE_URL: url, ...(token ? { MUSTER_JOIN_TOKEN: token } : {}) } })
      await d.waitForLog(/listening on/)
      return d
    }

    // standalone: a superadmin token and a dashboard session, both working
    let office = await startServe(oDir, ['--port', String(port)])
    const early = JSON.parse((await runMuster(['admin', 'api-token', '--data-dir', oDir, '--json'])).stdout) as { id: string; token: string }
    const pw = readFileSync(`${oDir}/platform/initial-superadmin-password`, 'utf8').trim()
    const standaloneSession = await login(pw)
    expect((await bearer(early.token, '/api/v1/whoami')).status).toBe(200)
    await office.stop()

    // join the controller
    const joinToken = (JSON.parse((await onController(['federation', 'mint', 'office-a', '--json'])).stdout) as { token: string }).token
    let joined = await startOffice(joinToken)
    await waitFor(async () => (JSON.parse((await onController(['federation', 'offices', '--json'])).stdout) as { offices: { fresh: boolean }[] }).offices[0]?.fresh, { what: 'office-a fresh', timeoutMs: 20_000 })
    const closedLogin = await fetch(`${url}/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ identifier: 'superadmin', password: pw }) })
    expect(closedLogin.status).toBe(403)
    const doorWords = ((await closedLogin.json()) as { error: { message: string } }).error.message

    // the attack: the early token, and the early session
    const who = await bearer(early.token, '/api/v1/whoami')
    expect([who.status, ((await who.json()) as { error: { message: string } }).error.message]).toEqual([401, doorWords])
    const minted = await bearer(early.token, '/api/v1/api-tokens', { method: 'POST', body: '{"name":"persist"}' })
    expect(minted.status).toBe(401)
    expect(await minted.text()).not.toContain('mat_')
    expect((await withCookie(standaloneSession.cookie, '/api/v1/whoami')).status).toBe(401)
    // the CLI says the same
    const cli = await runMuster(['projects', 'list'], { env: { MUSTER_URL: url, MUSTER_TOKEN: early.token } })
    expect([cli.code, cli.stderr]).toEqual([1, expect.stringContaining('Local password login is off')])
    // a vouch is the way in; the vouched session mints nothing either
    const v = JSON.parse((await onController(['federation', 'vouch', 'office-a', '--json'])).stdout) as { redeemUrl: string }
    const vouched = (await openVouchLink(v.redeemUrl)).headers.get('set-cookie')!.split(';')[0]!
    expect(await (await withCookie(vouched, '/api/v1/whoami')).json()).toMatchObject({ account: 'superadmin', role: 'superadmin' })
    // what the office recorded: the suspended token was tried, and refused
    const audit = await fetch(`${url}/api/v1/audit?action=token.mint`, { headers: { cookie: vouched } })
    expect(((await audit.json()) as { entries: { principal: string; tokenId: string | null; outcome: string; detail: string }[] }).entries[0]).toMatchObject({ principal: '(unknown)', tokenId: early.id, outcome: 'denied', detail: expect.stringContaining('suspended') })
    await joined.stop()

    // break-glass: local credentials work again, but a joined office still mints nothing over its API
    const bg = JSON.parse((await runMuster(['admin', 'break-glass', 'superadmin', '--data-dir', oDir, '--json'])).stdout) as { password: string }
    joined = await startOffice()
    expect((await bearer(early.token, '/api/v1/whoami')).status).toBe(200)
    const glassSession = await login(bg.password)
    expect(glassSession.status).toBe(200)
    expect((await withCookie(glassSession.cookie, '/api/v1/whoami')).status).toBe(200)
    const noMint = await bearer(early.token, '/api/v1/api-tokens', { method: 'POST', body: '{}' })
    expect([noMint.status, await noMint.text()]).toEqual([403, expect.stringContaining('not minted over its API')])
    await joined.stop()

    // the door closes again: rotate, detach, re-join with the new token
    const rotated = (JSON.parse((await onController(['federation', 'mint', 'office-a', '--rotate', '--json'])).stdout) as { token: string }).token
    expect((await runMuster(['admin', 'detach', '--data-dir', oDir])).code).toBe(0)
    joined = await startOffice(rotated)
    expect((await bearer(early.token, '/api/v1/whoami')).status).toBe(401)
    expect((await withCookie(glassSession.cookie, '/api/v1/whoami')).status).toBe(401)
    await joined.stop()

    // detached for good: the early token comes back (it was suspended), the break-glass session does not (it ended)
    expect((await runMuster(['admin', 'detach', '--data-dir', oDir])).code).toBe(0)
    office = await startServe(oDir, ['--port', String(port)])
    try {
      expect((await bearer(early.token, '/api/v1/whoami')).status).toBe(200)
      expect((await withCookie(glassSession.cookie, '/api/v1/whoami')).status).toBe(401)
      // the host's acts are in the office's audit
      const acts = JSON.parse((await runMuster(['audit', '--all', '--json', '--action', 'federation'], { env: { MUSTER_URL: url, MUSTER_TOKEN: early.token } })).stdout) as { entries: { action: string; principalKind: string; outcome: string }[] }
      expect(acts.entries.map((e) => `${e.action} ${e.principalKind} ${e.outcome}`)).toEqual(['federation.detach host ok', 'federation.detach host ok', 'federation.break-glass host ok', 'federation.vouch.redeem vouched-session ok'])
    } finally {
      await office.stop()
    }
  })

  test('seed 4 with people: a vouch creates an account on the office; break-glass refuses it; the write is logged', { timeout: 120_000 }, async () => {
    using dir = tmpDir()
    const cDir = `${dir.path}/controller`
    const oDir = `${dir.path}/office-a`
    await using controller = await startServe(cDir, [], FAST)
    const admin = (JSON.parse((await runMuster(['admin', 'api-token', '--data-dir', cDir, '--json'])).stdout) as { token: string }).token
    const onController = (args: string[], stdin?: string) => runMuster(args, { env: { MUSTER_URL: controller.url, MUSTER_TOKEN: admin }, ...(stdin ? { stdin } : {}) })
    // alice is a person on the controller: an operator, with a password of her own
    expect((await onController(['accounts', 'add', 'alice', '--role', 'operator'], 'alice-password-long\n')).code).toBe(0)
    const aliceEnv = { MUSTER_URL: controller.url, MUSTER_TOKEN: '', XDG_CONFIG_HOME: `${dir.path}/alice` }
    expect((await runMuster(['login', '--platform-url', controller.url, '--identifier', 'alice'], { env: aliceEnv, stdin: 'alice-password-long\n' })).code).toBe(0)
    const joinToken = (JSON.parse((await onController(['federation', 'mint', 'office-a', '--json'])).stdout) as { token: string }).token
    const port = await freePort()
    const url = `http://127.0.0.1:${port}`
    let office: Daemon = await startMuster(['serve', '--data-dir', oDir, '--port', String(port)], { env: { ...FAST, MUSTER_CONTROLLER_URL: controller.url, MUSTER_ADVERTISE_URL: url, MUSTER_JOIN_TOKEN: joinToken } })
    try {
      await office.waitForLog(/listening on/)
      await waitFor(async () => (JSON.parse((await onController(['federation', 'offices', '--json'])).stdout) as { offices: { advertiseUrl: string | null }[] }).offices[0]?.advertiseUrl, { what: 'office-a registered', timeoutMs: 20_000 })
      // alice vouches for herself with her own login: the office creates her account, with no usable password
      const v = JSON.parse((await runMuster(['federation', 'vouch', 'office-a', '--json'], { env: aliceEnv })).stdout) as { redeemUrl: string }
      const redeemed = await openVouchLink(v.redeemUrl)
      expect(redeemed.status).toBe(303)
      const alice = redeemed.headers.get('set-cookie')!.split(';')[0]!
      expect(await (await fetch(`${url}/api/v1/whoami`, { headers: { cookie: alice } })).json()).toMatchObject({ account: 'alice', role: 'operator' })
      // the office's superadmin (through the controller's vouch) sees the account and the identity write
      const su = JSON.parse((await onController(['federation', 'vouch', 'office-a', '--json'])).stdout) as { redeemUrl: string }
      const suCookie = (await openVouchLink(su.redeemUrl)).headers.get('set-cookie')!.split(';')[0]!
      const asSu = (path: string, init: RequestInit = {}) => fetch(`${url}${path}`, { ...init, headers: { cookie: suCookie, 'content-type': 'application/json' } })
      expect(((await (await asSu('/api/v1/accounts')).json()) as { accounts: { name: string; origin: string; hasPassword: boolean; role: string }[] }).accounts.find((a) => a.name === 'alice')).toMatchObject({ origin: 'vouch', hasPassword: false, role: 'operator' })
      const writes = ((await (await asSu('/api/v1/office/identity-writes')).json()) as { writes: { owner: string; action: string; role: string }[] }).writes
      expect(writes.map((w) => [w.owner, w.action, w.role])).toContainEqual(['alice', 'created', 'operator'])
      // her vouched session follows her account here: demoted by this office, the session ends at once
      expect((await asSu('/api/v1/accounts/alice/role', { method: 'POST', body: '{"role":"viewer"}' })).status).toBe(200)
      expect((await fetch(`${url}/api/v1/whoami`, { headers: { cookie: alice } })).status).toBe(401)
      // a password login with her name gets the closed door, like any other
      const pw = await fetch(`${url}/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ identifier: 'alice', password: 'alice-password-long' }) })
      expect(pw.status).toBe(403)
      await office.stop()
      // break-glass refuses the account a vouch created, and records the refusal
      const refused = await runMuster(['admin', 'break-glass', 'alice', '--data-dir', oDir])
      expect([refused.code, refused.stderr]).toEqual([1, expect.stringContaining('exists only because the controller vouched for it')])
      const ok = await runMuster(['admin', 'break-glass', '--data-dir', oDir])
      expect(ok.code).toBe(0)
      office = await startMuster(['serve', '--data-dir', oDir, '--port', String(port)], { env: FAST })
      await office.waitForLog(/listening on/)
      const local = JSON.parse((await runMuster(['admin', 'api-token', '--data-dir', oDir, '--json'])).stdout) as { token: string }
      const acts = JSON.parse((await runMuster(['audit', '--action', 'federation', '--json'], { env: { MUSTER_URL: url, MUSTER_TOKEN: local.token } })).stdout) as { entries: { action: string; principal: string; outcome: string; detail: string | null }[] }
      expect(acts.entries.map((e) => [e.action, e.principal, e.outcome])).toEqual([
        ['federation.break-glass', '(host)', 'ok'],
        ['federation.break-glass', '(host)', 'refused'],
        ['federation.vouch.redeem', 'superadmin', 'ok'],
        ['federation.vouch.redeem', 'alice', 'ok'],
      ])
      expect(acts.entries.at(-1)!.detail).toBe('role=operator account created')
    } finally {
      await office.stop()
    }
  })
})
