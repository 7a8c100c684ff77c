// The compiled binary, driven as an operator would.
import { describe, expect, test } from 'bun:test'
import { readFileSync, statSync, writeFileSync } from 'node:fs'
import { runMuster, startServe } from '../helpers/binary.ts'
import { tmpDir } from '../helpers/tmp.ts'

describe('muster binary', () => {
  test('--help lists the command groups; a group --help lists its verbs', async () => {
    const root = await runMuster(['--help'])
    expect(root.code).toBe(0)
    for (const g of ['serve', 'login', 'admin', 'version']) expect(root.stdout).toContain(g)
    const admin = await runMuster(['admin', '--help'])
    expect(admin.code).toBe(0)
    expect(admin.stdout).toContain('api-token')
    expect(admin.stdout).toContain('passwd')
  })

  test('version and version --json', async () => {
    const pkg = JSON.parse(readFileSync(`${import.meta.dir}/../../package.json`, 'utf8')) as { version: string }
    const plain = await runMuster(['version'])
    expect(plain.stdout.trim()).toBe(`muster ${pkg.version}`)
    const json = await runMuster(['version', '--json'])
    expect(JSON.parse(json.stdout)).toEqual({ version: pkg.version })
  })

  test('an unknown flag or command is a usage error, exit 2', async () => {
    const flag = await runMuster(['version', '--colour'])
    expect(flag.code).toBe(2)
    expect(flag.stderr).toContain('unknown flag --colour')
    const cmd = await runMuster(['frobnicate'])
    expect(cmd.code).toBe(2)
    const bad = await runMuster(['serve', '--port', 'eighty'])
    expect(bad.code).toBe(2)
    expect(bad.stderr).toContain('--port must be a whole number')
    using dir = tmpDir()
    const other = await runMuster(['serve', '--port', '0', '--data-dir', dir.path, '--database', 'mysql://db/muster'])
    expect(other.code).toBe(2)
    expect(other.stderr).toContain('postgres://')
    // a PostgreSQL that cannot be reached is one clear line, exit 1, and no SQLite file is made instead
    const down = await runMuster(['serve', '--port', '0', '--data-dir', dir.path, '--database', 'postgres://muster@127.0.0.1:1/muster'])
    expect(down.code).toBe(1)
    expect(down.stderr).toContain('Cannot reach the PostgreSQL store')
    expect(down.stderr).not.toContain('    at ')
    expect(await Bun.file(`${dir.path}/muster.db`).exists()).toBe(false)
  })

  test('an unreachable Platform is one clear line, no stack trace', async () => {
    using dir = tmpDir()
    writeFileSync(`${dir.path}/pw`, 'whatever\n', { mode: 0o600 })
    const r = await runMuster(['login', '--platform-url', 'http://127.0.0.1:9', '--identifier', 'superadmin', '--password-file', `${dir.path}/pw`])
    expect(r.code).toBe(1)
    expect(r.stderr).toContain('Cannot reach the Platform at http://127.0.0.1:9')
    expect(r.stderr.trim().split('\n')).toHaveLength(1)
    expect(r.stderr).not.toMatch(/\bat .*:\d+:\d+/)
  })

  test('serve holds the data directory; admin api-token works while it runs; login saves a token', async () => {
    using dir = tmpDir()
    const data = `${dir.path}/data`
    await using serve = await startServe(data)
    expect(serve.log()).toContain(`${data}/platform/initial-superadmin-password`)
    const pw = readFileSync(`${data}/platform/initial-superadmin-password`, 'utf8').trim()
    expect(serve.log()).not.toContain(pw)

    const second = await runMuster(['serve', '--data-dir', data, '--port', '0'])
    expect(second.code).toBe(1)
    expect(second.stderr).toContain(`pid ${serve.proc.pid}`)

    const minted = await runMuster(['admin', 'api-token', '--data-dir', data, '--name', 'ci', '--role', 'viewer', '--json'])
    expect(minted.code).toBe(0)
    const { token, name, role } = JSON.parse(minted.stdout) as { token: string; name: string; role: string }
    expect({ name, role }).toEqual({ name: 'ci', role: 'viewer' })
    const who = await fetch(`${serve.url}/api/v1/whoami`, { headers: { authorization: `Bearer ${token}` } })
    expect(await who.json()).toMatchObject({ role: 'viewer', account: null })
    // a superadmin token acts for the superadmin account (so it can vouch on offices)
    const admin = JSON.parse((await runMuster(['admin', 'api-token', '--data-dir', data, '--json'])).stdout) as { token: string; role: string }
    expect(admin.role).toBe('superadmin')
    const whoAdmin = await fetch(`${serve.url}/api/v1/whoami`, { headers: { authorization: `Bearer ${admin.token}` } })
    expect(await whoAdmin.json()).toMatchObject({ role: 'superadmin', account: 'superadmin' })
    const escalate = await runMuster(['admin', 'api-token', '--data-dir', data, '--role', 'superadmin', '--account', 'nobody'])
    expect(escalate.code).toBe(1)

    const home = `${dir.path}/home`
    const login = await runMuster(['login', '--platform-url', serve.url, '--identifier', 'superadmin', '--json'], { stdin: `${pw}\n`, env: { HOME: home, XDG_CONFIG_HOME: `${home}/.config` } })
    expect(login.code).toBe(0)
    const saved = `${home}/.config/muster/credentials.json`
    expect(statSync(saved).mode & 0o777).toBe(0o600)
    const creds = JSON.parse(readFileSync(saved, 'utf8')) as { url: string; token: string }
    expect(creds.url).toBe(serve.url)
    expect((await fetch(`${serve.url}/api/v1/whoami`, { headers: { authorization: `Bearer ${creds.token}` } })).status).toBe(200)
  })

  test('admin passwd sets a password from the host while serve runs; the old one stops working', async () => {
    using dir = tmpDir()
    const data = `${dir.path}/data`
    await using serve = await startServe(data)
    const old = readFileSync(`${data}/platform/initial-superadmin-password`, 'utf8').trim()
    const login = (password: string) => fetch(`${serve.url}/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ identifier: 'superadmin', password }) })
    const short = await runMuster(['admin', 'passwd', 'superadmin', '--data-dir', data], { stdin: 'short\n' })
    expect(short.code).toBe(1)
    expect(short.stderr).toContain('at least 12')
    const none = await runMuster(['admin', 'passwd', 'superadmin', '--data-dir', data])
    expect(none.code).toBe(1)
    expect(none.stderr).toContain('no terminal')
    const ok = await runMuster(['admin', 'passwd', 'superadmin', '--data-dir', data], { stdin: 'a-new-long-password\n' })
    expect(ok.code).toBe(0)
    expect(ok.stdout + ok.stderr).not.toContain('a-new-long-password')
    expect((await login('a-new-long-password')).status).toBe(200)
    expect((await login(old)).status).toBe(401)
    expect((await runMuster(['admin', 'passwd', 'nobody', '--data-dir', data], { stdin: 'a-new-long-password\n' })).code).toBe(1)
  })

  test('login asks for the password on a terminal without echoing it', { timeout: 30_000 }, async () => {
    using dir = tmpDir()
    const data = `${dir.path}/data`
    await using serve = await startServe(data)
    const pw = readFileSync(`${data}/platform/initial-superadmin-password`, 'utf8').trim()
    const { musterBin } = await import('../helpers/binary.ts')
    const bin = await musterBin()
    const home = `${dir.path}/home`
    // `script` gives the command a pseudo-terminal; we type into it through its stdin.
    const p = Bun.spawn(['script', '-q', '-e', '-c', `${bin} login --platform-url ${serve.url} --identifier superadmin`, '/dev/null'], {
      stdin: 'pipe',
      stdout: 'pipe',
      stderr: 'pipe',
      env: { ...process.env, HOME: home, XDG_CONFIG_HOME: `${home}/.config`, TERM: 'xterm' },
    })
    let screen = ''
    const reader = (async () => {
      for await (const chunk of p.stdout) screen += new TextDecoder().decode(chunk)
    })()
    const deadline = Date.now() + 15_000
    // A pty interleaves \r\n and colour codes; read the screen as plain text.
    const plain = () => screen.replace(/[\r\n]/g, '').replace(/\u001b\[[0-9;?]*[a-zA-Z]/g, '')
    while (!/password/i.test(plain()) && Date.now() < deadline) await Bun.sleep(50)
    p.stdin.write(`${pw}\r`)
    await p.stdin.flush()
    const code = await p.exited
    p.stdin.end()
    await reader
    expect(code).toBe(0)
    expect(plain()).toContain('Logged in')
    expect(plain()).not.toContain(pw)
  })
})
