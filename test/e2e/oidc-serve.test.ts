// serve with an identity provider, through dist/muster: clear refusals at
// start, --oidc-only (password login gone, host commands and break-glass
// left), SSO sessions no longer than the provider's ID token, and a joined
// office where SSO stays closed.
import { afterAll, describe, expect, test } from 'bun:test'
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { runMuster, startMuster, startServe } from '../helpers/binary.ts'
import { ScriptedBrowser } from '../helpers/oidc-browser.ts'
import { CLIENT_ID, CLIENT_SECRET, freePort, startOidcPlatform } from '../helpers/oidc-fixture.ts'
import { startOidcProvider } from '../helpers/oidc-provider.ts'
import { waitFor } from '../helpers/tmp.ts'

const dir = mkdtempSync(join(tmpdir(), 'muster-oidc-serve-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
const secret = join(dir, 'secret')
writeFileSync(secret, CLIENT_SECRET)
chmodSync(secret, 0o600)

/** serve's refusal at start: exit code and stderr (one clear line, no stack trace). */
async function refusedStart(flags: string[]): Promise<string> {
  const r = await runMuster(['serve', '--data-dir', join(dir, `data-${Math.random().toString(36).slice(2)}`), '--port', String(freePort()), ...flags], { timeoutMs: 60_000 })
  expect(r.code).not.toBe(0)
  expect(r.stderr).not.toMatch(/\n\s+at .+:\d+:\d+/)
  return r.stderr
}

const SSO = (issuer: string) => ['--oidc-issuer', issuer, '--oidc-client-id', CLIENT_ID, '--oidc-client-secret-file', secret, '--oidc-role-map', 'admins=superadmin']

describe('serve refuses a provider it cannot use, saying what to do', () => {
  test('plain http off loopback, an unreachable issuer, a secret readable by others, a bad role map, the secret on argv', async () => {
    // 0.0.0.0 is no loopback name: refused as plain http (and, were it not, nothing would leave this machine).
    expect(await refusedStart(SSO('http://0.0.0.0:1/realms/acme'))).toContain('is plain http: an issuer must be https')
    const port = freePort()
    expect(await refusedStart(SSO(`http://127.0.0.1:${port}`))).toContain(`Cannot use the identity provider http://127.0.0.1:${port}`)
    const open = join(dir, 'open-secret')
    writeFileSync(open, CLIENT_SECRET)
    chmodSync(open, 0o644)
    expect(await refusedStart(['--oidc-issuer', 'https://login.example.com', '--oidc-client-id', 'x', '--oidc-client-secret-file', open, '--oidc-role-map', 'a=superadmin'])).toContain(`chmod 600 ${open}`)
    expect(await refusedStart(['--oidc-issuer', 'https://login.example.com', '--oidc-client-id', 'x', '--oidc-client-secret-file', secret, '--oidc-role-map', 'admins=root'])).toContain('"root" for group "admins" is no role')
    expect(await refusedStart(['--oidc-issuer', 'https://login.example.com', '--oidc-client-id', 'x', '--oidc-role-map', 'a=viewer'])).toContain('--oidc-issuer needs --oidc-client-secret-file')
    expect(await refusedStart(['--oidc-issuer', 'https://login.example.com', '--oidc-client-id', 'x', '--oidc-client-secret', 'hunter2', '--oidc-role-map', 'a=viewer'])).toContain('unknown flag --oidc-client-secret for `muster serve` (did you mean --oidc-client-secret-file?)')
  })

  test('an issuer whose discovery names another issuer is refused', async () => {
    await using op = await startOidcProvider({ users: {}, clients: [{ clientId: CLIENT_ID, clientSecret: CLIENT_SECRET, redirectUris: ['http://127.0.0.1:9/cb'] }] })
    expect(await refusedStart(SSO(op.issuer.replace('127.0.0.1', 'localhost')))).toContain('its discovery document names another issuer')
  })

  test('the same settings from --oidc-config FILE start it', async () => {
    await using op = await startOidcProvider({ users: {}, clients: [{ clientId: CLIENT_ID, clientSecret: CLIENT_SECRET, redirectUris: ['http://127.0.0.1:9/cb'] }] })
    const file = join(dir, 'oidc.json')
    writeFileSync(file, JSON.stringify({ issuer: op.issuer, clientId: CLIENT_ID, clientSecretFile: secret, roleMap: { admins: 'superadmin' }, displayName: 'Acme' }))
    const s = await startServe(join(dir, 'data-config'), ['--oidc-config', file])
    try {
      expect(await (await fetch(`${s.url}/auth/oidc/info`)).json()).toEqual({ enabled: true, name: 'Acme', passwordLogin: true, deviceFlow: true })
    } finally {
      await s.stop()
    }
  })
})

describe('--oidc-only and the session lifetime', () => {
  test('password login is off, host-made tokens and break-glass remain; an SSO session ends with the ID token', { timeout: 150_000 }, async () => {
    const p = await startOidcPlatform({ extra: ['--oidc-only', '--oidc-allowed-domains', 'example.com'], idTokenTtlSeconds: 120 })
    try {
      const pw = readFileSync(join(p.dataDir, 'platform/initial-superadmin-password'), 'utf8').trim()
      const login = () => fetch(`${p.url}/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ identifier: 'superadmin', password: pw }) })
      const refused = await login()
      expect(refused.status).toBe(403)
      expect(((await refused.json()) as { error: { message: string } }).error.message).toContain('Password login is off on this Platform (serve --oidc-only): sign in with Example SSO')
      expect(await (await fetch(`${p.url}/auth/oidc/info`)).json()).toMatchObject({ enabled: true, passwordLogin: false })
      // A host-made token still works.
      const host = JSON.parse((await runMuster(['admin', 'api-token', '--data-dir', p.dataDir, '--json'])).stdout).token as string
      expect((await fetch(`${p.url}/api/v1/whoami`, { headers: { authorization: `Bearer ${host}` } })).status).toBe(200)

      // SSO: the session cookie and the CLI's token end with the provider's ID token (120 s), not after 12 h.
      const b = new ScriptedBrowser()
      const start = await b.request(`${p.url}/auth/oidc/start`)
      const back = await b.signIn(start.headers.get('location')!, 'alice', 'alice-pass', p.callback)
      const res = await b.request(back)
      const maxAge = Number(/Max-Age=(\d+)/.exec(res.headers.getSetCookie().find((c) => c.startsWith('muster_session='))!)![1])
      expect(maxAge).toBeGreaterThan(60)
      expect(maxAge).toBeLessThanOrEqual(120)
      const cookie = b.cookieHeader(p.url).split('; ').find((c) => c.startsWith('muster_session='))!
      const minted = await fetch(`${p.url}/api/v1/api-tokens`, { method: 'POST', headers: { cookie, 'content-type': 'application/json', origin: p.url }, body: '{"ttlDays":30}' })
      expect(minted.status).toBe(200)
      expect(Date.parse(((await minted.json()) as { expiresAt: string }).expiresAt)).toBeLessThanOrEqual(Date.now() + 120_000)

      // --oidc-allowed-domains: dave (other.example) is refused though his group maps.
      const d = new ScriptedBrowser()
      const dStart = await d.request(`${p.url}/auth/oidc/start`)
      const dBack = await d.request(await d.signIn(dStart.headers.get('location')!, 'dave', 'dave-pass', p.callback))
      expect(dBack.headers.get('location')).toBe('/?sso=refused')
      const denied = JSON.parse((await runMuster(['audit', '--action', 'sso.login', '--json'], { env: { MUSTER_URL: p.url, MUSTER_TOKEN: host } })).stdout).entries.find((e: { outcome: string }) => e.outcome === 'denied')
      expect(denied.detail).toBe(`domain not allowed (other.example); sub=dave iss=${p.op.issuer}`)

      // Break-glass (serve stopped) opens password login for superadmin; it never gives an sso account a password.
      let password = ''
      await p.restart(async () => {
        const sso = await runMuster(['admin', 'break-glass', 'alice@example.com', '--data-dir', p.dataDir])
        expect(sso.code).not.toBe(0)
        expect(sso.stderr).toContain('signs in with the identity provider (kind sso), so muster gives it no password')
        const bg = await runMuster(['admin', 'break-glass', 'superadmin', '--data-dir', p.dataDir, '--json'])
        expect(bg.code).toBe(0)
        password = JSON.parse(bg.stdout).password
      })
      const opened = await fetch(`${p.url}/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ identifier: 'superadmin', password }) })
      expect(opened.status).toBe(200)
    } finally {
      await p.close()
    }
  })
})

describe('on a joined office SSO stays closed', () => {
  test('the button is gone, the flows refuse, and an SSO session from before the join is suspended', { timeout: 150_000 }, async () => {
    const FAST = { MUSTER_FEDERATION_HEARTBEAT_SECONDS: '0.2' }
    await using controller = await startServe(join(dir, 'controller'), [], FAST)
    const cAdmin = JSON.parse((await runMuster(['admin', 'api-token', '--data-dir', join(dir, 'controller'), '--json'])).stdout).token as string
    const p = await startOidcPlatform()
    try {
      const b = new ScriptedBrowser()
      const start = await b.request(`${p.url}/auth/oidc/start`)
      await b.request(await b.signIn(start.headers.get('location')!, 'alice', 'alice-pass', p.callback))
      const cookie = b.cookieHeader(p.url).split('; ').find((c) => c.startsWith('muster_session='))!
      expect((await fetch(`${p.url}/api/v1/whoami`, { headers: { cookie } })).status).toBe(200)

      const joinToken = JSON.parse((await runMuster(['federation', 'mint', 'office-a', '--json'], { env: { MUSTER_URL: controller.url, MUSTER_TOKEN: cAdmin } })).stdout).token as string
      await p.serve.stop()
      const office = await startMuster(['serve', '--data-dir', p.dataDir, '--port', new URL(p.url).port, '--oidc-issuer', p.op.issuer, '--oidc-client-id', CLIENT_ID, '--oidc-client-secret-file', join(p.dataDir, '..', 'client-secret'), '--oidc-role-map', 'muster-admins=superadmin'], { env: { ...FAST, MUSTER_CONTROLLER_URL: controller.url, MUSTER_ADVERTISE_URL: p.url, MUSTER_JOIN_TOKEN: joinToken } })
      try {
        await office.waitForLog(/listening on/)
        await waitFor(async () => (JSON.parse((await runMuster(['federation', 'offices', '--json'], { env: { MUSTER_URL: controller.url, MUSTER_TOKEN: cAdmin } })).stdout) as { offices: { fresh: boolean }[] }).offices[0]?.fresh, { what: 'office-a fresh', timeoutMs: 20_000 })
        expect(await (await fetch(`${p.url}/auth/oidc/info`)).json()).toMatchObject({ enabled: false })
        const again = await fetch(`${p.url}/auth/oidc/start`, { redirect: 'manual' })
        expect([again.status, again.headers.get('location')]).toEqual([303, '/?sso=office'])
        const cli = await fetch(`${p.url}/auth/oidc/cli`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ redirectUri: 'http://127.0.0.1:40000/callback', state: 'A'.repeat(43), codeChallenge: 'B'.repeat(43) }) })
        expect(cli.status).toBe(403)
        expect(((await cli.json()) as { error: { message: string } }).error.message).toContain('muster federation vouch')
        expect((await fetch(`${p.url}/auth/oidc/device`, { method: 'POST' })).status).toBe(403)
        // The SSO session opened while standalone is a local credential: suspended behind the closed door.
        expect((await fetch(`${p.url}/api/v1/whoami`, { headers: { cookie } })).status).toBe(401)
      } finally {
        await office.stop()
      }
    } finally {
      await p.close()
    }
  })
})
