// Through dist/muster: accounts for people, each with
// exactly its role's permissions, and each permission boundary attacked from
// outside: a viewer deploys, an operator manages accounts, a demoted account
// keeps using its session and token, a disabled account logs in, the last
// superadmin is demoted. And a leaked token's child does not outlive it.
import { describe, expect, test } from 'bun:test'
import { readFileSync, writeFileSync } from 'node:fs'
import { runMuster, startServe } from '../helpers/binary.ts'
import { tmpDir } from '../helpers/tmp.ts'

const PASSWORDS = { vera: 'vera-viewer-pass-1', otto: 'otto-operator-pass-2', sam: 'sam-superadmin-pass-3' }

describe('accounts for people through dist/muster', () => {
  test('add, list, log in with exactly the role; demote, disable, remove; the last superadmin stays', { timeout: 120_000 }, async () => {
    using dir = tmpDir()
    const data = `${dir.path}/data`
    await using serve = await startServe(data)
    const admin = JSON.parse((await runMuster(['admin', 'api-token', '--data-dir', data, '--json'])).stdout) as { token: string }
    const asAdmin = (args: string[], stdin?: string) => runMuster(args, { env: { MUSTER_URL: serve.url, MUSTER_TOKEN: admin.token }, ...(stdin !== undefined ? { stdin } : {}) })
    // each person has a config directory of their own, where `muster login` saves the token
    const person = (name: string) => (args: string[]) => runMuster(args, { env: { MUSTER_URL: serve.url, MUSTER_TOKEN: '', XDG_CONFIG_HOME: `${dir.path}/${name}` } })
    const pwFile = (name: keyof typeof PASSWORDS) => {
      writeFileSync(`${dir.path}/${name}.pw`, PASSWORDS[name], { mode: 0o600 })
      return `${dir.path}/${name}.pw`
    }

    // add: password on stdin, from a file; an expiry
    expect((await asAdmin(['accounts', 'add', 'vera', '--role', 'viewer'], `${PASSWORDS.vera}\n`)).code).toBe(0)
    expect((await asAdmin(['accounts', 'add', 'otto', '--role', 'operator', '--password-file', pwFile('otto')])).code).toBe(0)
    const sam = await asAdmin(['accounts', 'add', 'sam', '--role', 'superadmin', '--password-file', pwFile('sam'), '--expires', '30d', '--json'])
    expect(Date.parse((JSON.parse(sam.stdout) as { expiresAt: string }).expiresAt) - Date.now()).toBeGreaterThan(29 * 86_400_000)
    // names are checked (the CLI before sending, the API for anything else); a taken name and a short password are refused
    expect((await asAdmin(['accounts', 'add', 'Bad Name!', '--role', 'viewer'], 'whatever-long-pass\n')).code).toBe(2)
    const bad = await fetch(`${serve.url}/api/v1/accounts`, { method: 'POST', headers: { authorization: `Bearer ${admin.token}`, 'content-type': 'application/json' }, body: JSON.stringify({ name: '../x', role: 'viewer', password: 'long-enough-password' }) })
    expect([bad.status, ((await bad.json()) as { error: { code: string } }).error.code]).toEqual([400, 'invalid-request'])
    const taken = await asAdmin(['accounts', 'add', 'vera', '--role', 'operator'], 'another-long-password\n')
    expect([taken.code, taken.stderr]).toEqual([1, expect.stringContaining('exists already')])
    expect((await asAdmin(['accounts', 'add', 'shorty', '--role', 'viewer'], 'short\n')).stderr).toContain('at least 12')
    const listed = JSON.parse((await asAdmin(['accounts', 'list', '--json'])).stdout) as { accounts: { name: string; role: string; origin: string; disabled: boolean }[] }
    expect(listed.accounts.map((a) => [a.name, a.role, a.origin, a.disabled])).toEqual([
      ['otto', 'operator', 'local', false],
      ['sam', 'superadmin', 'local', false],
      ['superadmin', 'superadmin', 'local', false],
      ['vera', 'viewer', 'local', false],
    ])
    expect((await asAdmin(['accounts', 'list'])).stdout).toMatch(/^otto\s+operator\s+local\s+active/m)

    // each logs in to the CLI with its role
    const vera = person('vera')
    const otto = person('otto')
    for (const [name, run] of [['vera', vera], ['otto', otto]] as const) {
      const li = await run(['login', '--platform-url', serve.url, '--identifier', name, '--password-file', pwFile(name), '--json'])
      expect(li.code).toBe(0)
      expect(JSON.parse(li.stdout)).toMatchObject({ account: name, role: name === 'vera' ? 'viewer' : 'operator' })
    }
    // attack: a viewer deploys → 403, nothing deployed; it still reads
    const deploy = (run: typeof vera, name: string) => run(['projects', 'deploy', name, '--replicas', '0', '--', 'sleep', '1'])
    const refused = await deploy(vera, 'by-vera')
    expect([refused.code, refused.stderr]).toEqual([1, expect.stringContaining('server.projects.manage')])
    expect((await vera(['projects', 'list'])).code).toBe(0)
    // attack: an operator manages accounts, reads the audit → 403; it deploys
    for (const args of [['accounts', 'add', 'mallory', '--role', 'superadmin'], ['accounts', 'list'], ['accounts', 'set-role', 'otto', 'superadmin'], ['audit']]) {
      const r = await runMuster(args, { env: { MUSTER_URL: serve.url, MUSTER_TOKEN: '', XDG_CONFIG_HOME: `${dir.path}/otto` }, stdin: 'mallory-password-1\n' })
      expect([args.join(' '), r.code, r.stderr]).toEqual([args.join(' '), 1, expect.stringMatching(/server\.(accounts\.manage|audit\.view)/)])
    }
    expect((await deploy(otto, 'by-otto')).code).toBe(0)

    // the dashboard: the same accounts log in with a session cookie, with the same role
    const session = async (name: keyof typeof PASSWORDS) => {
      const r = await fetch(`${serve.url}/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ identifier: name, password: PASSWORDS[name] }) })
      expect(r.status).toBe(200)
      return r.headers.get('set-cookie')!.split(';')[0]!
    }
    const ottoCookie = await session('otto')
    const withCookie = (cookie: string, path: string, init: RequestInit = {}) => fetch(`${serve.url}${path}`, { ...init, headers: { cookie, 'content-type': 'application/json', ...init.headers } })
    expect(await (await withCookie(ottoCookie, '/api/v1/whoami')).json()).toMatchObject({ account: 'otto', role: 'operator', kind: 'session' })
    expect((await withCookie(ottoCookie, '/api/v1/accounts')).status).toBe(403)
    // a token made on the host for otto's account (not by a login)
    const hostToken = JSON.parse((await runMuster(['admin', 'api-token', '--data-dir', data, '--account', 'otto', '--role', 'operator', '--json'])).stdout) as { token: string }
    const bearer = (token: string, path: string, init: RequestInit = {}) => fetch(`${serve.url}${path}`, { ...init, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', ...init.headers } })
    const deployBody = (name: string) => ({ method: 'POST', body: JSON.stringify({ name, command: ['sleep', '1'], replicas: 0 }) })
    expect((await bearer(hostToken.token, '/api/v1/projects', deployBody('by-host-token'))).status).toBe(200)

    // attack: demoted, otto keeps using what it had → its session and login token end at once, its other token is a viewer's
    const demoted = await asAdmin(['accounts', 'set-role', 'otto', 'viewer'])
    expect([demoted.code, demoted.stderr]).toEqual([0, expect.stringContaining('Ended 1 session(s) and revoked 1 token(s)')])
    expect((await withCookie(ottoCookie, '/api/v1/whoami')).status).toBe(401)
    const afterDemotion = await deploy(otto, 'by-otto-2')
    expect([afterDemotion.code, afterDemotion.stderr]).toEqual([1, expect.stringContaining('Authentication required')])
    expect((await bearer(hostToken.token, '/api/v1/projects', deployBody('by-host-token-2'))).status).toBe(403)
    expect(await (await bearer(hostToken.token, '/api/v1/whoami')).json()).toMatchObject({ account: 'otto', role: 'viewer' })

    // attack: disabled, vera cannot log in, and her session and saved token are gone
    const veraCookie = await session('vera')
    expect((await asAdmin(['accounts', 'disable', 'vera'])).code).toBe(0)
    expect((await withCookie(veraCookie, '/api/v1/whoami')).status).toBe(401)
    expect((await vera(['projects', 'list'])).code).toBe(1)
    const again = await vera(['login', '--platform-url', serve.url, '--identifier', 'vera', '--password-file', pwFile('vera')])
    expect([again.code, again.stderr]).toEqual([1, expect.stringContaining('Login refused')])
    expect((await asAdmin(['accounts', 'enable', 'vera'])).code).toBe(0)
    expect((await vera(['login', '--platform-url', serve.url, '--identifier', 'vera', '--password-file', pwFile('vera')])).code).toBe(0)
    expect((await withCookie(veraCookie, '/api/v1/whoami')).status).toBe(401) // what ended stays ended

    // the last superadmin: sam and superadmin are two; with sam removed, superadmin cannot be demoted, disabled or removed
    expect((await asAdmin(['accounts', 'remove', 'sam'])).code).toBe(0)
    for (const args of [['accounts', 'set-role', 'superadmin', 'operator'], ['accounts', 'disable', 'superadmin'], ['accounts', 'remove', 'superadmin']]) {
      const r = await asAdmin(args)
      expect([args.join(' '), r.code, r.stderr]).toEqual([args.join(' '), 1, expect.stringContaining('last superadmin')])
    }
    expect(await (await bearer(admin.token, '/api/v1/whoami')).json()).toMatchObject({ account: 'superadmin', role: 'superadmin' })
    expect((await asAdmin(['accounts', 'remove', 'otto'])).code).toBe(0)
    expect((await bearer(hostToken.token, '/api/v1/whoami')).status).toBe(401)

    // every change is in the audit, with its principal; no password or token appears there
    const audit = await asAdmin(['audit', '--all', '--jsonl'])
    expect(audit.code).toBe(0)
    const entries = audit.stdout.trim().split('\n').map((l) => JSON.parse(l) as { action: string; principal: string; principalKind: string; target: string | null; outcome: string })
    const seen = entries.map((e) => `${e.action} ${e.target} ${e.outcome}`)
    for (const line of ['account.add vera ok', 'account.add otto ok', 'account.add sam ok', 'account.set-role otto ok', 'account.disable vera ok', 'account.enable vera ok', 'account.remove sam ok', 'account.set-role superadmin refused', 'account.remove otto ok', 'login otto ok', 'project.deploy by-vera denied', 'project.deploy by-otto ok', 'account.add mallory denied']) {
      expect(seen).toContain(line)
    }
    expect(entries.find((e) => e.action === 'project.deploy' && e.target === 'by-otto')).toMatchObject({ principal: 'otto', principalKind: 'api-token' })
    const everything = `${audit.stdout}\n${(await asAdmin(['audit', '--all', '--json'])).stdout}`
    const secrets = [...Object.values(PASSWORDS), 'mallory-password-1', admin.token, hostToken.token, readFileSync(`${data}/platform/initial-superadmin-password`, 'utf8').trim()]
    for (const name of ['vera', 'otto']) secrets.push((JSON.parse(readFileSync(`${dir.path}/${name}/muster/credentials.json`, 'utf8')) as { token: string }).token)
    for (const cookie of [ottoCookie, veraCookie]) secrets.push(cookie.split('=')[1]!)
    for (const s of secrets) {
      expect(everything).not.toContain(s)
      expect(everything).not.toContain(s.split('.').at(-1)!) // a token's secret part alone
    }
  })

  test("a leaked token's children die with it, and never outlive its expiry (item 7)", { timeout: 60_000 }, async () => {
    using dir = tmpDir()
    const data = `${dir.path}/data`
    await using serve = await startServe(data)
    const leaked = JSON.parse((await runMuster(['admin', 'api-token', '--data-dir', data, '--name', 'leaked', '--ttl-days', '3', '--json'])).stdout) as { id: string; token: string; expiresAt: string }
    const mint = async (token: string, body: object) => {
      const r = await fetch(`${serve.url}/api/v1/api-tokens`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify(body) })
      expect(r.status).toBe(200)
      return (await r.json()) as { id: string; token: string; expiresAt: string | null }
    }
    // the attacker mints a child asking for a long life, and a grandchild of it
    const child = await mint(leaked.token, { name: 'persist', ttlDays: 3650 })
    expect(Date.parse(child.expiresAt!)).toBeLessThanOrEqual(Date.parse(leaked.expiresAt))
    const grandchild = await mint(child.token, { name: 'persist-2' })
    expect(Date.parse(grandchild.expiresAt!)).toBeLessThanOrEqual(Date.parse(leaked.expiresAt))
    const status = (token: string) => fetch(`${serve.url}/api/v1/whoami`, { headers: { authorization: `Bearer ${token}` } }).then((r) => r.status)
    expect([await status(child.token), await status(grandchild.token)]).toEqual([200, 200])
    // the owner revokes the leaked token: everything minted from it is revoked with it
    const revoked = await runMuster(['tokens', 'revoke', leaked.id, '--json'], { env: { MUSTER_URL: serve.url, MUSTER_TOKEN: JSON.parse((await runMuster(['admin', 'api-token', '--data-dir', data, '--json'])).stdout).token } })
    expect(JSON.parse(revoked.stdout)).toEqual({ id: leaked.id, revoked: true, descendants: 2 })
    expect([await status(leaked.token), await status(child.token), await status(grandchild.token)]).toEqual([401, 401, 401])
    // and a child that was revoked alone leaves its parent working
    const other = JSON.parse((await runMuster(['admin', 'api-token', '--data-dir', data, '--json'])).stdout) as { token: string }
    const kid = await mint(other.token, { name: 'kid' })
    const r = await fetch(`${serve.url}/api/v1/api-tokens/${kid.id}`, { method: 'DELETE', headers: { authorization: `Bearer ${other.token}` } })
    expect(await r.json()).toEqual({ id: kid.id, revoked: true, descendants: 0 })
    expect([await status(other.token), await status(kid.token)]).toEqual([200, 401])
  })
})

describe('the audit through dist/muster', () => {
  test('--follow streams new entries as JSON lines, for a SIEM', { timeout: 60_000 }, async () => {
    using dir = tmpDir()
    const data = `${dir.path}/data`
    await using serve = await startServe(data)
    const admin = JSON.parse((await runMuster(['admin', 'api-token', '--data-dir', data, '--json'])).stdout) as { token: string }
    const env = { MUSTER_URL: serve.url, MUSTER_TOKEN: admin.token }
    expect((await runMuster(['accounts', 'add', 'first', '--role', 'viewer'], { env, stdin: 'first-password-1\n' })).code).toBe(0)
    const { startMuster } = await import('../helpers/binary.ts')
    await using follow = await startMuster(['audit', '--follow', '--jsonl', '--action', 'account'], { env })
    await follow.waitForLog(/"target":"first"/)
    expect((await runMuster(['accounts', 'add', 'second', '--role', 'viewer'], { env, stdin: 'second-password-2\n' })).code).toBe(0)
    expect((await runMuster(['projects', 'deploy', 'web', '--replicas', '0', '--', 'sleep', '1'], { env })).code).toBe(0)
    await follow.waitForLog(/"target":"second"/, 20_000)
    const lines = follow.log().trim().split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as { action: string; target: string; principal: string; source: string; outcome: string; at: string })
    expect(lines.map((l) => [l.action, l.target, l.principal, l.outcome])).toEqual([
      ['account.add', 'first', 'superadmin', 'ok'],
      ['account.add', 'second', 'superadmin', 'ok'],
    ])
    expect(follow.log()).not.toContain('second-password-2')
  })
})
