// install.sh into temporary roots (--root DIR): both roles, the receipt, the
// units under systemd-analyze, update, removal, and every refusal. Nothing here
// touches the host's /etc, /usr or /var: each test gets its own root.
import { afterAll, describe, expect, test } from 'bun:test'
import { chmodSync, cpSync, existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { createServer, connect, type AddressInfo } from 'node:net'
import { join, resolve } from 'node:path'
import { musterBin } from '../helpers/binary.ts'
import { asRoot, describeAsRoot } from '../helpers/root.ts'
import { tmpDir, waitFor } from '../helpers/tmp.ts'
import { generateCa, issueServerCert, spkiPin } from '../../src/crypto/ca.ts'

const SCRIPT = resolve(import.meta.dir, '../../install.sh')
const TIMEOUT = 180_000 // a 110 MB binary copied and hashed, useradd, systemd-analyze: minutes on an overloaded 2-core machine
const scratch = tmpDir('muster-install-')
afterAll(() => scratch[Symbol.dispose]())

let rootCount = 0
/** An empty directory to install into, as if it were /. */
function newRoot(): string {
  const dir = join(scratch.path, `root-${++rootCount}`)
  mkdirSync(dir)
  return dir
}

interface Run { code: number; stdout: string; stderr: string }
/**
 * Runs install.sh. With `asUser` (when the tests run as root) it runs as that uid, and the
 * script is fed on stdin: the checkout may sit under a directory that user cannot enter.
 */
async function installSh(args: string[], opts: { asUser?: number } = {}): Promise<Run> {
  const switchUser = opts.asUser !== undefined && asRoot
  const cmd = switchUser ? ['setpriv', `--reuid=${opts.asUser}`, `--regid=${opts.asUser}`, '--clear-groups', 'sh', '-s', '--', ...args] : ['sh', SCRIPT, ...args]
  const p = Bun.spawn(cmd, { stdin: switchUser ? Bun.file(SCRIPT) : 'ignore', stdout: 'pipe', stderr: 'pipe', env: { ...process.env, LC_ALL: 'C' }, cwd: switchUser ? '/' : undefined })
  const [stdout, stderr, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited])
  return { code, stdout, stderr }
}

/** The exit code, showing stderr when it is not the expected one. */
function expectCode(r: Run, code: number) {
  expect({ code: r.code, stderr: r.code === code ? '' : r.stderr }).toEqual({ code, stderr: '' })
}

/** A stand-in binary that answers `version --json` like muster (or fails to). */
function stubBinary(version: string | null, name = `stub-${version ?? 'broken'}`): string {
  const path = join(scratch.path, name)
  const body = version === null
    ? 'echo "unknown command" >&2; exit 2'
    : `[ "$1 $2" = "version --json" ] && { echo '{"version":"${version}"}'; exit 0; }; exit 2`
  writeFileSync(path, `#!/bin/sh\n${body}\n`)
  chmodSync(path, 0o755)
  return path
}

/** A self-signed P-256 certificate for 127.0.0.1 made by openssl, with its SHA-256 fingerprint (hex). */
function selfSigned(name: string): { certPem: string; keyPem: string; fingerprint: string } {
  const dir = join(scratch.path, name)
  mkdirSync(dir)
  const gen = Bun.spawnSync(['openssl', 'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-days', '1',
    '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1', '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem')])
  if (gen.exitCode !== 0) throw new Error(`openssl req failed: ${gen.stderr.toString()}`)
  const certPem = readFileSync(join(dir, 'cert.pem'), 'utf8')
  const der = Buffer.from(certPem.replace(/-----[^-]+-----|\s/g, ''), 'base64')
  return { certPem, keyPem: readFileSync(join(dir, 'key.pem'), 'utf8'), fingerprint: new Bun.CryptoHasher('sha256').update(der).digest('hex') }
}

let real: Promise<{ path: string; version: string; sha256: string }> | undefined
/** A private copy of dist/muster (a rebuild mid-run cannot change it), its version and checksum. */
function realBinary() {
  real ??= (async () => {
    const path = join(scratch.path, 'muster')
    cpSync(await musterBin(), path)
    const p = Bun.spawnSync([path, 'version', '--json'])
    const { version } = JSON.parse(p.stdout.toString()) as { version: string }
    return { path, version, sha256: await sha256(path) }
  })()
  return real
}

async function sha256(path: string): Promise<string> {
  return new Bun.CryptoHasher('sha256').update(await Bun.file(path).arrayBuffer()).digest('hex')
}

/** Every path under root, relative, sorted. */
function listing(root: string, rel = ''): string[] {
  const out: string[] = []
  for (const name of readdirSync(join(root, rel)).sort()) {
    const p = rel ? `${rel}/${name}` : name
    out.push(p)
    if (lstatSync(join(root, p)).isDirectory()) out.push(...listing(root, p))
  }
  return out.sort()
}

/** Listing with type, mode and owner, to prove a refused run changed nothing. */
function snapshot(root: string): string[] {
  return listing(root).map((p) => {
    const s = lstatSync(join(root, p))
    return `${p} ${s.mode.toString(8)} ${s.uid}:${s.gid} ${s.isFile() ? s.size : ''}`
  })
}

/** The account database a root needs for useradd --root: the root's "system", not muster's. */
const ACCOUNT_DB = new Set(['etc', ...['passwd', 'group', 'shadow', 'gshadow'].flatMap((f) => [`etc/${f}`, `etc/${f}-`]), 'etc/.pwd.lock'])

function passwdEntry(root: string, name: string) {
  const line = readFileSync(join(root, 'etc/passwd'), 'utf8').split('\n').find((l) => l.startsWith(`${name}:`))
  if (!line) return undefined
  const [, , uid, gid, , home, shell] = line.split(':')
  return { uid: Number(uid), gid: Number(gid), home, shell }
}

function mentionsAccount(root: string): string[] {
  return ['passwd', 'group', 'shadow', 'gshadow'].filter((f) => readFileSync(join(root, 'etc', f), 'utf8').split('\n').some((l) => l.startsWith('muster:')))
}

interface Receipt {
  role: string; version: string; installedAt: string; account: string; uid: number; gid: number
  accountCreated: boolean; groupCreated: boolean; dataDir: string; binary: string
  units: string[]; dirs: string[]; files: { path: string; sha256: string }[]
}
function readReceipt(root: string): Receipt {
  return JSON.parse(readFileSync(join(root, 'etc/muster/receipt.json'), 'utf8')) as Receipt
}

function mode(root: string, p: string) {
  const s = statSync(join(root, p))
  return { mode: s.mode & 0o7777, uid: s.uid, gid: s.gid }
}

/** systemd-analyze verify inside the root: it resolves ExecStart= and EnvironmentFile= there. */
function verifyUnit(root: string, unit: string): Run {
  // The root has no systemd of its own; verify needs sysinit.target & co, so
  // lend it the host's unit directory for the check, then take it away again.
  const hostUnits = ['/usr/lib/systemd/system', '/lib/systemd/system'].find((d) => existsSync(join(d, 'sysinit.target')))
  if (!hostUnits) throw new Error('systemd unit files not found: install Debian\'s systemd package')
  mkdirSync(join(root, 'usr/lib/systemd'), { recursive: true })
  cpSync(hostUnits, join(root, 'usr/lib/systemd/system'), { recursive: true })
  // ExecReload=/bin/kill is the system's: lend it too.
  const lentKill = !existsSync(join(root, 'bin/kill'))
  if (lentKill) {
    mkdirSync(join(root, 'bin'), { recursive: true })
    cpSync('/bin/kill', join(root, 'bin/kill'))
  }
  try {
    const p = Bun.spawnSync(['systemd-analyze', 'verify', `--root=${root}`, unit], { env: { ...process.env, SYSTEMD_LOG_COLOR: '0' } })
    return { code: p.exitCode, stdout: p.stdout.toString(), stderr: p.stderr.toString() }
  } finally {
    rmSync(join(root, 'usr/lib'), { recursive: true, force: true })
    if (lentKill) rmSync(join(root, 'bin'), { recursive: true, force: true })
  }
}

const HARDENING = ['NoNewPrivileges=yes', 'ProtectSystem=strict', 'ReadWritePaths=/var/lib/muster', 'PrivateTmp=yes', 'ProtectHome=yes', 'User=muster', 'Group=muster']

/** What every install must leave, whatever the role. */
async function expectInstalled(root: string, role: 'platform' | 'worker', bin: { version: string; sha256: string }) {
  const r = readReceipt(root)
  const acct = passwdEntry(root, 'muster')
  expect(acct).toBeDefined()
  expect(acct!.home).toBe('/var/lib/muster')
  expect(acct!.shell).toMatch(/nologin$/)
  expect(r).toMatchObject({ role, version: bin.version, account: 'muster', uid: acct!.uid, gid: acct!.gid, dataDir: '/var/lib/muster', binary: '/usr/local/bin/muster', accountCreated: true })
  expect(r.installedAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/)
  expect(Math.abs(Date.parse(r.installedAt) - Date.now())).toBeLessThan(120_000)
  expect(acct!.uid).toBeGreaterThan(0)

  expect(mode(root, 'usr/local/bin/muster')).toEqual({ mode: 0o755, uid: 0, gid: 0 })
  expect(mode(root, 'var/lib/muster')).toEqual({ mode: 0o700, uid: acct!.uid, gid: acct!.gid })
  expect(mode(root, 'etc/muster')).toEqual({ mode: 0o755, uid: 0, gid: 0 })
  expect(mode(root, 'etc/muster/receipt.json')).toEqual({ mode: 0o644, uid: 0, gid: 0 })

  // Every file listed is there with the recorded checksum, and every file the
  // install created (outside the account database) is listed.
  expect(r.files).toContainEqual({ path: '/usr/local/bin/muster', sha256: bin.sha256 })
  for (const f of r.files) expect({ path: f.path, sha256: await sha256(join(root, f.path)) }).toEqual(f)
  const created = listing(root).filter((p) => !ACCOUNT_DB.has(p) && !p.startsWith('var/lib/muster/') && lstatSync(join(root, p)).isFile())
  expect(created.sort()).toEqual([...r.files.map((f) => f.path.slice(1)), 'etc/muster/receipt.json'].sort())
  expect(r.dirs).toContain('/etc/muster')
  expect(r.dirs).not.toContain('/var/lib/muster')
  expect(listing(root).filter((p) => /muster-(new|old)/.test(p))).toEqual([])
  return r
}

describe('install.sh', () => {
  test('is POSIX sh and shellcheck-clean', () => {
    const sc = Bun.spawnSync(['shellcheck', '--shell=sh', '--severity=style', SCRIPT])
    expect(sc.stdout.toString() + sc.stderr.toString()).toBe('')
    expect(sc.exitCode).toBe(0)
    expect(readFileSync(SCRIPT, 'utf8').split('\n')[0]).toBe('#!/bin/sh')
  }, TIMEOUT)

  test('is committed executable, so `sudo ./install.sh` runs from a clone', () => {
    const ls = Bun.spawnSync(['git', 'ls-files', '-s', 'install.sh'], { cwd: resolve(import.meta.dir, '../..') })
    expect(ls.stdout.toString()).toStartWith('100755 ')
  })

  test('--no-start goes with an install, not with --uninstall', async () => {
    const r = await installSh(['--uninstall', '--no-start', '--root', newRoot()])
    expect(r.stderr).toContain('--uninstall takes only --purge and --root')
    expectCode(r, 2)
  })

  test('an unknown or missing role is a usage error and installs nothing', async () => {
    const root = newRoot()
    const bad = await installSh(['--role', 'manager', '--binary', stubBinary('1.0.0'), '--root', root])
    expect(bad.stderr).toContain("unknown role 'manager'")
    expectCode(bad, 2)
    const none = await installSh(['--binary', stubBinary('1.0.0'), '--root', root])
    expect(none.stderr).toContain('--role is required')
    expectCode(none, 2)
    const noBinary = await installSh(['--role', 'worker', '--root', root])
    expect(noBinary.stderr).toContain('no binary')
    expectCode(noBinary, 2)
    const unsummed = await installSh(['--role', 'worker', '--from', 'http://127.0.0.1:9/muster', '--root', root])
    expect(unsummed.stderr).toContain('--from needs --sha256')
    expectCode(unsummed, 2)
    expect(listing(root)).toEqual([])
  }, TIMEOUT)
})

describeAsRoot('install.sh as root, into temporary roots', () => {
  test('platform: account, binary, data dir, serve.env, unit, receipt; the unit verifies', async () => {
    const bin = await realBinary()
    const root = newRoot()
    const run = await installSh(['--role', 'platform', '--binary', bin.path, '--root', root])
    expect(run.stderr).toBe('')
    expectCode(run, 0)
    expect(run.stdout).toContain(`installed muster ${bin.version} (platform)`)
    expect(run.stdout).toContain('muster.service was installed but not enabled or started')
    expect(run.stdout).toContain('sudo -u muster muster serve --data-dir /var/lib/muster')

    const r = await expectInstalled(root, 'platform', bin)
    expect(r.units).toEqual(['muster.service'])
    expect(r.files.map((f) => f.path).sort()).toEqual(['/etc/muster/serve.env', '/etc/systemd/system/muster.service', '/usr/local/bin/muster'])
    expect(r.groupCreated).toBe(true)

    expect(mode(root, 'etc/muster/serve.env')).toEqual({ mode: 0o600, uid: 0, gid: 0 })
    expect(readFileSync(join(root, 'etc/muster/serve.env'), 'utf8')).toMatch(/^MUSTER_SERVE_ARGS=$/m)
    expect(mode(root, 'etc/systemd/system/muster.service')).toEqual({ mode: 0o644, uid: 0, gid: 0 })
    const unit = readFileSync(join(root, 'etc/systemd/system/muster.service'), 'utf8').split('\n')
    expect(unit).toContain('ExecStart=/usr/local/bin/muster serve --data-dir /var/lib/muster $MUSTER_SERVE_ARGS')
    expect(unit).toContain('EnvironmentFile=/etc/muster/serve.env')
    expect(unit).toContain('WantedBy=multi-user.target')
    expect(unit).toContain('ExecReload=/bin/kill -HUP $MAINPID') // systemctl reload swaps the engine (docs/nodes.md)
    for (const line of [...HARDENING, 'CapabilityBoundingSet=']) expect(unit).toContain(line)
    expect(unit.some((l) => l.startsWith('AmbientCapabilities'))).toBe(false)

    const v = verifyUnit(root, 'muster.service')
    expect(v.stderr).toBe('')
    expectCode(v, 0)
    // The same check notices a unit whose ExecStart= is missing.
    rmSync(join(root, 'usr/local/bin/muster'))
    const broken = verifyUnit(root, 'muster.service')
    expect(broken.code).not.toBe(0)
    expect(broken.stderr).toContain('/usr/local/bin/muster')
  }, TIMEOUT)

  test('worker: the Agent unit waits for worker join and restarts on failure, never on status 3; it verifies', async () => {
    const bin = await realBinary()
    const root = newRoot()
    const run = await installSh(['--role', 'worker', '--binary', bin.path, '--root', root])
    expect(run.stderr).toBe('')
    expectCode(run, 0)
    expect(run.stdout).toContain('sudo -u muster muster worker join --platform-url https://HOST:PORT --node-id NAME --platform-fingerprint sha256:')
    expect(run.stdout).toContain('muster-agent.service was installed but not enabled or started')

    const r = await expectInstalled(root, 'worker', bin)
    expect(r.units).toEqual(['muster-agent.service'])
    expect(r.files.map((f) => f.path).sort()).toEqual(['/etc/systemd/system/muster-agent.service', '/usr/local/bin/muster'])
    expect(existsSync(join(root, 'etc/muster/serve.env'))).toBe(false)
    expect(existsSync(join(root, 'etc/systemd/system/muster.service'))).toBe(false)

    const unit = readFileSync(join(root, 'etc/systemd/system/muster-agent.service'), 'utf8').split('\n')
    expect(unit).toContain('ExecStart=/usr/local/bin/muster agent --data-dir /var/lib/muster')
    expect(unit).toContain('ConditionPathExists=/var/lib/muster/worker/agent.json')
    expect(unit).toContain('Restart=on-failure')
    // …but not after exit status 3, the Agent's "credential refused for good" (docs/operations.md): no restart loop.
    expect(unit).toContain('RestartPreventExitStatus=3')
    for (const line of HARDENING) expect(unit).toContain(line)
    // Replicas outlive the Agent and run as muster-run, which the Agent may switch to and signal (nothing else).
    expect(unit).toContain('KillMode=process')
    expect(unit).toContain('CapabilityBoundingSet=CAP_SETUID CAP_SETGID CAP_KILL')
    expect(unit).toContain('AmbientCapabilities=CAP_SETUID CAP_SETGID CAP_KILL')
    const runAccount = passwdEntry(root, 'muster-run')!
    expect(runAccount.shell).toMatch(/nologin$/)
    expect(runAccount.uid).not.toBe(r.uid)
    expect(r).toMatchObject({ runAccount: 'muster-run', runAccountCreated: true })

    const v = verifyUnit(root, 'muster-agent.service')
    expect(v.stderr).toBe('')
    expectCode(v, 0)
  }, TIMEOUT)

  test('a listen port below 1024 keeps CAP_NET_BIND_SERVICE, nothing else does', async () => {
    const root = newRoot()
    const run = await installSh(['--role', 'platform', '--binary', stubBinary('1.0.0'), '--serve-args', '--port 443 --public-url https://p.example', '--root', root])
    expectCode(run, 0)
    expect(readFileSync(join(root, 'etc/muster/serve.env'), 'utf8')).toMatch(/^MUSTER_SERVE_ARGS=--port 443 --public-url https:\/\/p\.example$/m)
    const unit = readFileSync(join(root, 'etc/systemd/system/muster.service'), 'utf8').split('\n')
    expect(unit).toContain('CapabilityBoundingSet=CAP_NET_BIND_SERVICE')
    expect(unit).toContain('AmbientCapabilities=CAP_NET_BIND_SERVICE')
  }, TIMEOUT)

  test('update in place: a newer binary replaces the old, the receipt is rewritten, the data stays', async () => {
    const bin = await realBinary()
    const root = newRoot()
    expectCode(await installSh(['--role', 'worker', '--binary', stubBinary('0.0.1'), '--root', root]), 0)
    const before = readReceipt(root)
    expect(before.version).toBe('0.0.1')
    writeFileSync(join(root, 'var/lib/muster/state'), 'kept')

    const run = await installSh(['--role', 'worker', '--binary', bin.path, '--root', root])
    expect(run.stderr).toBe('')
    expectCode(run, 0)
    expect(run.stdout).toContain(`updated muster (worker) 0.0.1 -> ${bin.version}`)
    const after = await expectInstalled(root, 'worker', bin)
    expect(after.uid).toBe(before.uid)
    expect(after.dirs).toEqual(before.dirs)
    expect(after.files.find((f) => f.path === '/usr/local/bin/muster')!.sha256).toBe(bin.sha256)
    expect(readFileSync(join(root, 'etc/passwd'), 'utf8').match(/^muster:/gm)).toHaveLength(1)
    expect(readFileSync(join(root, 'var/lib/muster/state'), 'utf8')).toBe('kept')
  }, TIMEOUT)

  test('update keeps the operator\'s serve.env and derives the unit from it', async () => {
    const root = newRoot()
    expectCode(await installSh(['--role', 'platform', '--binary', stubBinary('0.0.1'), '--root', root]), 0)
    const env = join(root, 'etc/muster/serve.env')
    writeFileSync(env, 'MUSTER_SERVE_ARGS=--port 80 --remote-dispatch\n')
    const run = await installSh(['--role', 'platform', '--binary', stubBinary('0.0.2'), '--root', root])
    expectCode(run, 0)
    expect(readFileSync(env, 'utf8')).toBe('MUSTER_SERVE_ARGS=--port 80 --remote-dispatch\n')
    const r = readReceipt(root)
    expect(r.version).toBe('0.0.2')
    expect(r.files.find((f) => f.path === '/etc/muster/serve.env')!.sha256).toBe(await sha256(env))
    expect(readFileSync(join(root, 'etc/systemd/system/muster.service'), 'utf8')).toContain('AmbientCapabilities=CAP_NET_BIND_SERVICE\n')
  }, TIMEOUT)

  test('the role of an installed machine cannot be switched; nothing changes', async () => {
    const root = newRoot()
    expectCode(await installSh(['--role', 'worker', '--binary', stubBinary('1.0.0'), '--root', root]), 0)
    const before = snapshot(root)
    const receipt = readFileSync(join(root, 'etc/muster/receipt.json'), 'utf8')
    const run = await installSh(['--role', 'platform', '--binary', stubBinary('1.0.0'), '--root', root])
    expect(run.stderr).toContain('this machine is installed as worker')
    expect(run.stderr).toContain('--uninstall')
    expectCode(run, 1)
    expect(snapshot(root)).toEqual(before)
    expect(readFileSync(join(root, 'etc/muster/receipt.json'), 'utf8')).toBe(receipt)
  }, TIMEOUT)

  test('--uninstall removes what the receipt lists and keeps only the data directory', async () => {
    const root = newRoot()
    expectCode(await installSh(['--role', 'platform', '--binary', stubBinary('1.0.0'), '--root', root]), 0)
    writeFileSync(join(root, 'var/lib/muster/muster.db'), 'data')
    const run = await installSh(['--uninstall', '--root', root])
    expect(run.stderr).toBe('')
    expectCode(run, 0)
    expect(run.stdout).toContain('removed account muster')
    expect(run.stdout).toContain('kept the data directory /var/lib/muster')
    expect(listing(root).filter((p) => !ACCOUNT_DB.has(p))).toEqual(['var', 'var/lib', 'var/lib/muster', 'var/lib/muster/muster.db'])
    expect(readFileSync(join(root, 'var/lib/muster/muster.db'), 'utf8')).toBe('data')
    expect(mentionsAccount(root)).toEqual([])

    // No receipt now: a second removal refuses and says what it would need.
    const again = await installSh(['--uninstall', '--root', root])
    expect(again.stderr).toContain('no receipt at')
    expect(again.stderr).toContain('/etc/muster/receipt.json')
    expectCode(again, 1)

    // A reinstall over data kept from an account with another uid hands it to the new one.
    Bun.spawnSync(['chown', '-R', '4242:4242', join(root, 'var/lib/muster')])
    expectCode(await installSh(['--role', 'worker', '--binary', stubBinary('1.0.0'), '--root', root]), 0)
    const acct = passwdEntry(root, 'muster')!
    expect(mode(root, 'var/lib/muster/muster.db')).toMatchObject({ uid: acct.uid, gid: acct.gid })
  }, TIMEOUT)

  test('--uninstall --purge removes the data directory too', async () => {
    const root = newRoot()
    expectCode(await installSh(['--role', 'worker', '--binary', stubBinary('1.0.0'), '--root', root]), 0)
    mkdirSync(join(root, 'var/lib/muster/worker'))
    writeFileSync(join(root, 'var/lib/muster/worker/agent.json'), '{}')
    const run = await installSh(['--uninstall', '--purge', '--root', root])
    expectCode(run, 0)
    expect(run.stdout).toContain('purged /var/lib/muster')
    expect(run.stdout).toContain('removed account muster-run')
    expect(listing(root).filter((p) => !ACCOUNT_DB.has(p))).toEqual([])
    expect(mentionsAccount(root)).toEqual([])
    expect(passwdEntry(root, 'muster-run')).toBeUndefined()
  }, TIMEOUT)

  test('--from: a download installs only when its SHA-256 matches', async () => {
    const stub = stubBinary('2.0.0')
    const sum = await sha256(stub)
    using server = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: () => new Response(Bun.file(stub)) })
    const url = `http://127.0.0.1:${server.port}/muster`

    const wrong = newRoot()
    const bad = await installSh(['--role', 'worker', '--from', url, '--sha256', '0'.repeat(64), '--root', wrong])
    expect(bad.stderr).toContain(`checksum mismatch for ${url}`)
    expect(bad.stderr).toContain(sum)
    expectCode(bad, 1)
    expect(listing(wrong)).toEqual([])

    const right = newRoot()
    const ok = await installSh(['--role', 'worker', '--from', url, '--sha256', sum.toUpperCase(), '--root', right])
    expect(ok.stderr).toBe('')
    expectCode(ok, 0)
    expect(readReceipt(right).files.find((f) => f.path === '/usr/local/bin/muster')!.sha256).toBe(sum)
  }, TIMEOUT)

  test('--platform-fingerprint: the download must come from the pinned certificate', async () => {
    const pinned = selfSigned('tls')
    const stub = stubBinary('2.1.0')
    const sum = await sha256(stub)
    using server = Bun.serve({ hostname: '127.0.0.1', port: 0, tls: { cert: pinned.certPem, key: pinned.keyPem }, fetch: () => new Response(Bun.file(stub)) })
    const url = `https://127.0.0.1:${server.port}/muster`

    const wrong = newRoot()
    const bad = await installSh(['--role', 'worker', '--from', url, '--sha256', sum, '--platform-fingerprint', `sha256:${'ab'.repeat(32)}`, '--root', wrong])
    expect(bad.stderr).toContain(`is sha256:${pinned.fingerprint}, not the pinned`)
    expectCode(bad, 1)
    expect(listing(wrong)).toEqual([])

    const right = newRoot()
    const ok = await installSh(['--role', 'worker', '--from', url, '--sha256', sum, '--platform-fingerprint', `sha256:${pinned.fingerprint}`, '--root', right])
    expect(ok.stderr).toBe('')
    expectCode(ok, 0)
    expect(ok.stdout).toContain(`--platform-fingerprint sha256:${pinned.fingerprint}`)
    expect(readReceipt(right).version).toBe('2.1.0')
  }, TIMEOUT)

  test('--platform-fingerprint: a server that swaps its certificate after the probe gets no download request', async () => {
    // The pinned server answers the first connection (the certificate probe); every later
    // connection reaches an impostor with another key that serves the very same bytes, so
    // only the key pin on the download itself can refuse it.
    const pinned = selfSigned('tls-pinned')
    const other = selfSigned('tls-other')
    const stub = stubBinary('2.2.0')
    const sum = await sha256(stub)
    let impostorRequests = 0
    using genuine = Bun.serve({ hostname: '127.0.0.1', port: 0, tls: { cert: pinned.certPem, key: pinned.keyPem }, fetch: () => new Response(Bun.file(stub)) })
    using impostor = Bun.serve({ hostname: '127.0.0.1', port: 0, tls: { cert: other.certPem, key: other.keyPem }, fetch: () => (impostorRequests++, new Response(Bun.file(stub))) })
    const [genuinePort, impostorPort] = [genuine.port!, impostor.port!]
    const routed: number[] = []
    const front = createServer((client) => {
      const port = routed.length === 0 ? genuinePort : impostorPort
      routed.push(port)
      const upstream = connect(port, '127.0.0.1')
      client.pipe(upstream).pipe(client)
      client.on('error', () => upstream.destroy())
      upstream.on('error', () => client.destroy())
    })
    await new Promise<void>((resolve) => front.listen(0, '127.0.0.1', resolve))
    try {
      const url = `https://127.0.0.1:${(front.address() as AddressInfo).port}/muster`
      const root = newRoot()
      const swapped = await installSh(['--role', 'worker', '--from', url, '--sha256', sum, '--platform-fingerprint', `sha256:${pinned.fingerprint}`, '--root', root])
      expect(swapped.stderr).toContain(`download of ${url} failed`)
      expectCode(swapped, 1)
      expect(listing(root)).toEqual([])
      expect(routed[0]).toBe(genuinePort) // the probe saw the pinned certificate
      expect(routed.slice(1)).toContain(impostorPort) // the download went to the impostor…
      expect(impostorRequests).toBe(0) // …and sent it nothing: the handshake failed the key pin
    } finally {
      front.close()
    }
  }, TIMEOUT)

  test('--platform-fingerprint with the Platform CA pin: the download must chain to that CA; a borrowed CA certificate does not help', async () => {
    const ca = await generateCa()
    const lookalike = await generateCa()
    const names = { commonName: 'muster platform', dnsNames: ['localhost'], ipAddresses: ['127.0.0.1'], days: 2 }
    const leaf = await issueServerCert(ca, names)
    const foreign = await issueServerCert(lookalike, names)
    const stub = stubBinary('2.2.0')
    const sum = await sha256(stub)
    const serveWith = (cert: string, key: string) => Bun.serve({ hostname: '127.0.0.1', port: 0, tls: { cert, key }, fetch: () => new Response(Bun.file(stub)) })
    using real = serveWith(leaf.certPem + ca.certPem, leaf.keyPem)
    // the real CA certificate is public: an impostor sends it behind a leaf from another CA
    using borrowed = serveWith(foreign.certPem + ca.certPem, foreign.keyPem)
    const pin = spkiPin(ca.certPem)

    const refused = newRoot()
    const bad = await installSh(['--role', 'worker', '--from', `https://127.0.0.1:${borrowed.port}/muster`, '--sha256', sum, '--platform-fingerprint', pin, '--root', refused])
    expect(bad.code).toBe(1)
    expect(bad.stderr).toContain('download of')
    expect(listing(refused)).toEqual([])
    const other = newRoot()
    const wrongPin = await installSh(['--role', 'worker', '--from', `https://127.0.0.1:${real.port}/muster`, '--sha256', sum, '--platform-fingerprint', spkiPin(lookalike.certPem), '--root', other])
    expect(wrongPin.code).toBe(1)
    expect(wrongPin.stderr).toContain('no CA it sent has that key')
    expect(listing(other)).toEqual([])

    const right = newRoot()
    const ok = await installSh(['--role', 'worker', '--from', `https://127.0.0.1:${real.port}/muster`, '--sha256', sum, '--platform-fingerprint', pin, '--root', right])
    expect(ok.stderr).toBe('')
    expect(ok.code).toBe(0)
    expect(readReceipt(right).version).toBe('2.2.0')
  }, TIMEOUT)

  test('an interrupted install (Ctrl-C while it runs) is rolled back', async () => {
    const root = newRoot()
    const marker = join(scratch.path, 'version-asked')
    const slow = join(scratch.path, 'slow-muster')
    writeFileSync(slow, `#!/bin/sh\ntouch '${marker}'\nsleep 20\necho '{"version":"1.0.0"}'\n`)
    chmodSync(slow, 0o755)
    // setsid: its own process group, which is what a terminal's Ctrl-C signals.
    const p = Bun.spawn(['setsid', 'sh', SCRIPT, '--role', 'worker', '--binary', slow, '--root', root], { stdout: 'pipe', stderr: 'pipe' })
    await waitFor(() => existsSync(marker), { what: 'install.sh to ask the binary its version' })
    expect(listing(root).filter((f) => /^usr\/local\/bin\/\.muster\.muster-new\.\d+$/.test(f))).toHaveLength(1)
    process.kill(-p.pid, 'SIGINT')
    expect(await p.exited).toBe(130)
    expect(await new Response(p.stderr).text()).toContain('undoing this run')
    expect(listing(root)).toEqual([])
  }, TIMEOUT)

  test('refusals: missing binary, not a muster binary, not root, unwritable target — nothing half-installed', async () => {
    const root = newRoot()
    const missing = await installSh(['--role', 'worker', '--binary', join(scratch.path, 'no-such-file'), '--root', root])
    expect(missing.stderr).toContain('no-such-file does not exist')
    expectCode(missing, 1)

    const stub = stubBinary('1.0.0')
    const mismatch = await installSh(['--role', 'worker', '--binary', stub, '--sha256', 'f'.repeat(64), '--root', root])
    expect(mismatch.stderr).toContain(`checksum mismatch for ${stub}`)
    expectCode(mismatch, 1)

    const broken = await installSh(['--role', 'worker', '--binary', stubBinary(null), '--root', root])
    expect(broken.stderr).toContain('is not a muster binary')
    expectCode(broken, 1)
    expect(listing(root)).toEqual([])

    const notRoot = await installSh(['--role', 'worker', '--binary', stubBinary('1.0.0')], { asUser: 65534 })
    expect(notRoot.stderr).toContain('must run as root')
    expectCode(notRoot, 1)

    // Something in the way of /etc/systemd/system: the account was already
    // created when the script finds out, and the run is undone.
    mkdirSync(join(root, 'etc'))
    writeFileSync(join(root, 'etc/systemd'), '')
    const before = snapshot(root)
    const blocked = await installSh(['--role', 'platform', '--binary', stubBinary('1.0.0'), '--root', root])
    expect(blocked.stderr).toContain(`cannot create directory ${root}/etc/systemd: something that is not a directory is in the way`)
    expect(blocked.stderr).toContain('undoing this run')
    expectCode(blocked, 1)
    expect(snapshot(root)).toEqual(before)
  }, TIMEOUT)
})
