// Through dist/muster: API tokens could never be revoked
// and never expired. Now (docs/security.md): `muster tokens list|revoke`, `muster
// logout`, login tokens end after 30 days, `admin api-token --ttl-days`, and
// `admin passwd` / `admin break-glass` end the account's sessions and revoke
// the tokens its logins made — each at once.
import { describe, expect, test } from 'bun:test'
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { runMuster, startServe } from '../helpers/binary.ts'
import { tmpDir } from '../helpers/tmp.ts'

const DAY = 86_400_000

describe('API tokens and sessions through dist/muster', () => {
  test('list, revoke, logout, --ttl-days; passwd and break-glass end login tokens and sessions', { timeout: 90_000 }, async () => {
    using dir = tmpDir()
    const data = `${dir.path}/data`
    let serve = await startServe(data)
    try {
      const status = (token: string) => fetch(`${serve.url}/api/v1/whoami`, { headers: { authorization: `Bearer ${token}` } }).then((r) => r.status)
      const admin = JSON.parse((await runMuster(['admin', 'api-token', '--data-dir', data, '--json'])).stdout) as { id: string; token: string; expiresAt: string | null }
      expect(admin.expiresAt).toBeNull()
      const shortLived = JSON.parse((await runMuster(['admin', 'api-token', '--data-dir', data, '--name', 'ci', '--role', 'viewer', '--ttl-days', '2', '--json'])).stdout) as { id: string; token: string; expiresAt: string }
      expect(Date.parse(shortLived.expiresAt) - Date.now()).toBeGreaterThan(2 * DAY - 60_000)
      expect(Date.parse(shortLived.expiresAt) - Date.now()).toBeLessThanOrEqual(2 * DAY)
      expect((await runMuster(['admin', 'api-token', '--data-dir', data, '--ttl-days', '0'])).code).toBe(2)

      // muster login: a login token of at most 30 days
      const config = { XDG_CONFIG_HOME: `${dir.path}/config`, MUSTER_URL: serve.url, MUSTER_TOKEN: '' }
      const password = readFileSync(`${data}/platform/initial-superadmin-password`, 'utf8').trim()
      writeFileSync(`${dir.path}/pw`, password, { mode: 0o600 })
      const li = await runMuster(['login', '--platform-url', serve.url, '--identifier', 'superadmin', '--password-file', `${dir.path}/pw`, '--json'], { env: config })
      expect(li.code).toBe(0)
      const saved = `${dir.path}/config/muster/credentials.json`
      const loginToken = (JSON.parse(readFileSync(saved, 'utf8')) as { token: string }).token
      expect(Date.parse((JSON.parse(li.stdout) as { expiresAt: string }).expiresAt) - Date.now()).toBeLessThanOrEqual(30 * DAY)

      // tokens list: ids, names, roles, expiry; never a secret
      const listed = await runMuster(['tokens', 'list', '--json'], { env: config })
      expect(listed.code).toBe(0)
      const tokens = (JSON.parse(listed.stdout) as { tokens: { id: string; name: string; role: string; account: string | null; createdAt: string; lastUsedAt: string | null; expiresAt: string | null }[] }).tokens
      expect(tokens.map((t) => Object.keys(t).sort())[0]).toEqual(['account', 'createdAt', 'expiresAt', 'id', 'lastUsedAt', 'name', 'role'])
      const loginId = loginToken.slice(4, 20)
      expect(tokens.map((t) => t.id).sort()).toEqual([admin.id, shortLived.id, loginId].sort())
      const mine = tokens.find((t) => t.id === loginId)!
      expect(Date.parse(mine.expiresAt!) - Date.parse(mine.createdAt)).toBe(30 * DAY)
      expect(mine.lastUsedAt).not.toBeNull()
      expect(listed.stdout).not.toContain(admin.token.slice(21))
      const table = await runMuster(['tokens', 'list'], { env: config })
      expect(table.stdout).toMatch(/^ID\s+NAME\s+ROLE\s+ACCOUNT/m)

      // tokens revoke: dead at once
      expect(await status(shortLived.token)).toBe(200)
      const revoked = await runMuster(['tokens', 'revoke', shortLived.id], { env: config })
      expect(revoked.code).toBe(0)
      expect(await status(shortLived.token)).toBe(401)
      expect((await runMuster(['tokens', 'revoke', shortLived.id], { env: config })).code).toBe(1)
      // a viewer sees only its own and cannot revoke another's
      const viewer = JSON.parse((await runMuster(['admin', 'api-token', '--data-dir', data, '--role', 'viewer', '--account', 'superadmin', '--name', 'peek', '--json'])).stdout) as { id: string; token: string }
      const asViewer = { MUSTER_URL: serve.url, MUSTER_TOKEN: viewer.token }
      expect((await runMuster(['tokens', 'revoke', admin.id], { env: asViewer })).code).toBe(1)
      expect(await status(admin.token)).toBe(200)

      // admin passwd (while serve runs): the login token and the session die, host-made tokens live
      const session = (await fetch(`${serve.url}/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ identifier: 'superadmin', password }) })).headers.get('set-cookie')!.split(';')[0]!
      const sessionStatus = () => fetch(`${serve.url}/api/v1/whoami`, { headers: { cookie: session } }).then((r) => r.status)
      expect(await sessionStatus()).toBe(200)
      const passwd = await runMuster(['admin', 'passwd', 'superadmin', '--data-dir', data], { stdin: 'a-new-password-123\n' })
      expect(passwd.code).toBe(0)
      expect(passwd.stderr).toContain('ended 1 session(s) and revoked 1 token(s)')
      expect(await status(loginToken)).toBe(401)
      expect(await sessionStatus()).toBe(401)
      expect(await status(admin.token)).toBe(200)

      // muster logout: revokes the saved token and removes the file
      writeFileSync(`${dir.path}/pw`, 'a-new-password-123', { mode: 0o600 })
      expect((await runMuster(['login', '--platform-url', serve.url, '--identifier', 'superadmin', '--password-file', `${dir.path}/pw`], { env: config })).code).toBe(0)
      const second = (JSON.parse(readFileSync(saved, 'utf8')) as { token: string }).token
      expect(await status(second)).toBe(200)
      const out = await runMuster(['logout'], { env: config })
      expect(out.code).toBe(0)
      expect(out.stderr).toContain('revoked')
      expect(existsSync(saved)).toBe(false)
      expect(await status(second)).toBe(401)
      expect((await runMuster(['logout'], { env: config })).stderr).toContain('Not logged in')

      // admin break-glass ACCOUNT (Platform stopped) does the same
      expect((await runMuster(['login', '--platform-url', serve.url, '--identifier', 'superadmin', '--password-file', `${dir.path}/pw`], { env: config })).code).toBe(0)
      const third = (JSON.parse(readFileSync(saved, 'utf8')) as { token: string }).token
      await serve.stop()
      expect((await runMuster(['admin', 'break-glass', 'superadmin', '--data-dir', data])).code).toBe(0)
      serve = await startServe(data)
      expect(await status(third)).toBe(401)
      expect(await status(admin.token)).toBe(200)
    } finally {
      await serve.stop()
    }
  })
})
