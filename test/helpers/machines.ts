// Machines with systemd as PID 1, for tests of what only a real systemd shows
// (install.sh's unit, the bootstrap line's `systemctl start`, Delegate=, restarts).
//
//   const why = await machinesUnavailable()          // null, or why nspawn cannot boot here
//   describeWithMachines(why, 'name', () => { … })   // skipped with the reason where it cannot
//   const net = Network.create(['p', 'm1'])          // test/helpers/netns.ts
//   const m = await Machine.boot(net.host('m1'), { binds: [{ host: dir, machine: '/opt/t', readOnly: true }] })
//   await m.run(['systemctl', 'is-active', 'muster-agent'])   // → { code, stdout, stderr }
//   m.path('/var/lib/muster/worker/agent.json')      // that file, as the host sees it
//   await m.stop()                                   // also on exit, and when the namespace is deleted
//
// The root filesystem is Debian 12 (bookworm) from Debian's packages, made by
// `debootstrap` once and cached in /var/tmp/muster-bookworm-<hash of what goes
// into it>; a build goes to a temporary name and is renamed into place only
// when complete, so an interrupted build is never used (a lock file holding the
// builder's pid keeps two runs from building at once). `bun test/helpers/machines.ts
// --build` makes it ahead of the tests (.ci/run does).
//
// A machine boots with `systemd-nspawn -b --volatile=overlay` (the cached tree
// stays read-only under a tmpfs, so machines share it and leave nothing behind)
// on a network namespace of netns.ts, so it is one more host on 198.18.x.0/24
// and no traffic leaves the namespaces. Commands run inside with `nsenter -t
// <its PID 1> -a` and a clean environment. Machines are named `fleet-<pid>-…`
// like the namespaces; stopping one kills its PID 1, which ends every process in it.
import { describe } from 'bun:test'
import { spawnSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { closeSync, existsSync, openSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync, writeSync } from 'node:fs'
import { join } from 'node:path'
import type { Host, Ran } from './netns.ts'
import { netnsUnavailable } from './netns.ts'

/** What the root filesystem holds besides debootstrap's minbase (install.sh and the bootstrap line need these). */
export const PACKAGES = ['systemd', 'systemd-sysv', 'dbus', 'iproute2', 'curl', 'ca-certificates', 'procps', 'passwd', 'util-linux', 'coreutils']
const SUITE = 'bookworm'
/** Timers and services of a stock Debian that only add noise (and network attempts) to a test boot. */
const MASKED = ['apt-daily.timer', 'apt-daily-upgrade.timer', 'dpkg-db-backup.timer', 'e2scrub_all.timer', 'fstrim.timer', 'systemd-timesyncd.service']
/** Bumped when the way the tree is made changes (a new hash, so a new cache). */
const RECIPE = 1
const BOOT_TIMEOUT_MS = 90_000
const MACHINE_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'

/** The Debian mirror: $MUSTER_TEST_DEBIAN_MIRROR, else the first `URIs:`/`deb` line for .../debian in this machine's apt sources. */
export function debianMirror(): string {
  if (process.env.MUSTER_TEST_DEBIAN_MIRROR) return process.env.MUSTER_TEST_DEBIAN_MIRROR
  const files = ['/etc/apt/sources.list', ...safeList('/etc/apt/sources.list.d').filter((f) => /\.(list|sources)$/.test(f)).map((f) => join('/etc/apt/sources.list.d', f))]
  for (const f of files) {
    let text = ''
    try {
      text = readFileSync(f, 'utf8')
    } catch {
      continue
    }
    for (const line of text.split('\n')) {
      const m = /^\s*(?:URIs:|deb(?:\s+\[[^\]]*\])?)\s+(https?:\/\/\S+)/.exec(line)
      if (m && /\/debian\/?$/.test(m[1]!)) return m[1]!.replace(/\/$/, '')
    }
  }
  return 'http://deb.debian.org/debian'
}

function safeList(dir: string): string[] {
  try {
    return readdirSync(dir)
  } catch {
    return []
  }
}

/** Where the cached tree for the current recipe lives. */
export function rootfsPath(): string {
  const hash = createHash('sha256').update(JSON.stringify({ RECIPE, SUITE, PACKAGES, MASKED, arch: process.arch })).digest('hex').slice(0, 12)
  return `/var/tmp/muster-bookworm-${hash}`
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM'
  }
}

/** Figures of the last build in this process (null when the cache was used). */
export let lastBuild: { ms: number; bytes: number } | null = null

/**
 * The cached bookworm tree, built when missing. Prints what it does on stderr
 * (a build takes about a minute here); throws with debootstrap's log on failure.
 */
export async function bookwormRoot(opts: { timeoutMs?: number } = {}): Promise<string> {
  const target = rootfsPath()
  const lock = `${target}.lock`
  const deadline = Date.now() + (opts.timeoutMs ?? 20 * 60_000)
  for (;;) {
    if (existsSync(join(target, 'etc/muster-test-rootfs'))) return target
    let fd: number
    try {
      fd = openSync(lock, 'wx', 0o600)
    } catch {
      // Another run builds it; a lock whose builder is gone is taken over.
      const holder = Number(readFileSync(lock, 'utf8').trim() || '0')
      if (!holder || !alive(holder)) rmSync(lock, { force: true })
      else if (Date.now() > deadline) throw new Error(`timed out waiting for pid ${holder} to build ${target}`)
      else await Bun.sleep(500)
      continue
    }
    try {
      writeSync(fd, `${process.pid}\n`)
      closeSync(fd)
      if (!existsSync(join(target, 'etc/muster-test-rootfs'))) await build(target)
    } finally {
      rmSync(lock, { force: true })
    }
  }
}

async function build(target: string): Promise<void> {
  const started = performance.now()
  const work = `${target}.build-${process.pid}`
  rmSync(work, { recursive: true, force: true })
  if (existsSync(target)) rmSync(target, { recursive: true, force: true }) // left without its marker: incomplete
  const mirror = debianMirror()
  process.stderr.write(`machines: debootstrap ${SUITE} from ${mirror} into ${work} (once; cached as ${target})\n`)
  const logFile = `${work}.log`
  const p = Bun.spawn(['debootstrap', '--variant=minbase', `--include=${PACKAGES.join(',')}`, SUITE, work, mirror], { stdout: Bun.file(logFile), stderr: 'pipe', stdin: 'ignore' })
  const [err, code] = await Promise.all([new Response(p.stderr).text(), p.exited])
  if (code !== 0) {
    const tail = existsSync(logFile) ? readFileSync(logFile, 'utf8').split('\n').slice(-15).join('\n') : ''
    rmSync(work, { recursive: true, force: true })
    throw new Error(`debootstrap exited ${code}: ${err.trim()}\n${tail}`)
  }
  rmSync(logFile, { force: true })
  for (const unit of MASKED) {
    try {
      Bun.spawnSync(['ln', '-sf', '/dev/null', join(work, 'etc/systemd/system', unit)])
    } catch {}
  }
  writeFileSync(join(work, 'etc/hostname'), 'machine\n')
  rmSync(join(work, 'var/cache/apt/archives'), { recursive: true, force: true })
  writeFileSync(join(work, 'etc/muster-test-rootfs'), `${JSON.stringify({ suite: SUITE, mirror, packages: PACKAGES, builtAt: new Date().toISOString() })}\n`)
  renameSync(work, target)
  const du = spawnSync('du', ['-sb', target], { encoding: 'utf8' }).stdout
  lastBuild = { ms: Math.round(performance.now() - started), bytes: Number(du.split('\t')[0]) || 0 }
  process.stderr.write(`machines: built ${target} in ${(lastBuild.ms / 1000).toFixed(1)} s (${(lastBuild.bytes / 1048576).toFixed(0)} MiB)\n`)
}

/**
 * Null when machines can boot here, else why not (not root, no namespaces,
 * systemd-nspawn or debootstrap missing, or nspawn cannot start a process in
 * the tree). Builds the cached tree when needed.
 */
export async function machinesUnavailable(): Promise<string | null> {
  const ns = netnsUnavailable()
  if (ns) return ns
  for (const tool of ['systemd-nspawn', 'nsenter']) if (spawnSync('sh', ['-c', `command -v ${tool}`]).status !== 0) return `${tool} is not installed (.ci/deps.sh installs systemd-container and util-linux)`
  if (!existsSync(join(rootfsPath(), 'etc/muster-test-rootfs')) && spawnSync('sh', ['-c', 'command -v debootstrap']).status !== 0) return 'debootstrap is not installed (.ci/deps.sh installs it)'
  const root = await bookwormRoot()
  const probe = spawnSync('systemd-nspawn', ['-q', '--register=no', '--keep-unit', '--volatile=overlay', '-D', root, '-M', `fleet-${process.pid}-probe`, '/bin/true'], { encoding: 'utf8', env: { ...process.env, SYSTEMD_NSPAWN_LOCK: '0' }, timeout: 60_000 })
  if (probe.status !== 0) return `systemd-nspawn cannot start a process here: ${(probe.stderr || probe.error?.message || `exit ${probe.status}`).trim().split('\n').slice(-2).join(' ')}`
  return null
}

/** A describe block that runs where machines boot (its name ends in "[root]"), else is skipped with the reason in its name and on stderr. */
export function describeWithMachines(why: string | null, name: string, fn: () => void): void {
  if (!why) return describe(`${name} [root]`, fn)
  process.stderr.write(`skip: "${name}": ${why}; CI runs it as root where systemd-nspawn boots\n`)
  describe.skip(`${name} [skipped: ${why}]`, fn)
}

export interface Bind {
  host: string
  machine: string
  readOnly?: boolean
}

export interface BootOptions {
  /** Host directories or files visible inside. */
  binds?: Bind[]
  timeoutMs?: number
}

const running = new Set<Machine>()
process.once('exit', () => {
  for (const m of running) m.kill()
})

/** Kills machines left by test runs whose process is gone (a run killed before its afterAll). */
export function sweepStaleMachines(): void {
  for (const entry of safeList('/proc')) {
    const pid = Number(entry)
    if (!pid) continue
    let argv: string[]
    try {
      argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')
    } catch {
      continue
    }
    if (!argv[0]?.endsWith('systemd-nspawn')) continue
    const name = argv[argv.indexOf('-M') + 1] ?? ''
    const m = /^fleet-(\d+)-/.exec(name)
    if (m && Number(m[1]) !== process.pid && !alive(Number(m[1]))) {
      try {
        process.kill(pid, 'SIGKILL')
      } catch {}
    }
  }
}

export class Machine {
  private stopped = false
  /** Milliseconds from spawning nspawn to `systemctl is-system-running` saying running or degraded. */
  bootMs = 0

  private constructor(
    readonly name: string,
    readonly host: Host,
    private readonly proc: Bun.Subprocess<'ignore', 'pipe', 'pipe'>,
    /** PID 1 of the machine, as the host sees it. */
    readonly pid: number,
    private readonly out: () => string,
  ) {}

  /** Boots the cached tree on `host`'s namespace and waits until systemd has finished starting up. */
  static async boot(host: Host, opts: BootOptions = {}): Promise<Machine> {
    sweepStaleMachines()
    const root = await bookwormRoot()
    const name = `${host.ns}`.slice(0, 60)
    const started = performance.now()
    const args = ['systemd-nspawn', '-q', '-b', '--volatile=overlay', '--register=no', '--keep-unit', `--network-namespace-path=/run/netns/${host.ns}`, '--console=read-only', '-D', root, '-M', name]
    for (const b of opts.binds ?? []) args.push(`${b.readOnly ? '--bind-ro' : '--bind'}=${b.host}:${b.machine}`)
    const proc = Bun.spawn(args, { env: { ...process.env, SYSTEMD_NSPAWN_LOCK: '0' }, stdin: 'ignore', stdout: 'pipe', stderr: 'pipe' })
    let out = ''
    const pump = async (s: ReadableStream<Uint8Array>) => {
      const dec = new TextDecoder()
      for await (const c of s) out += dec.decode(c)
    }
    void pump(proc.stdout)
    void pump(proc.stderr)
    const deadline = Date.now() + (opts.timeoutMs ?? BOOT_TIMEOUT_MS)
    const fail = (why: string) => {
      proc.kill('SIGKILL')
      return new Error(`machine ${name}: ${why}\n${out.split('\n').slice(-20).join('\n')}`)
    }
    // PID 1 of the machine: nspawn's child whose pid inside its namespace is 1.
    let pid = 0
    while (!pid) {
      if (proc.exitCode !== null) throw fail(`systemd-nspawn exited (${proc.exitCode}) before the machine started`)
      if (Date.now() > deadline) throw fail('no PID 1 appeared')
      pid = initOf(proc.pid)
      if (!pid) await Bun.sleep(50)
    }
    const m = new Machine(name, host, proc, pid, () => out)
    running.add(m)
    let state = ''
    for (;;) {
      if (proc.exitCode !== null) {
        m.forget()
        throw fail(`systemd-nspawn exited (${proc.exitCode}) during boot`)
      }
      const r = await m.run(['systemctl', 'is-system-running'], { timeoutMs: 10_000 })
      state = r.stdout.trim()
      if (state === 'running' || state === 'degraded') break
      if (Date.now() > deadline) {
        const failed = (await m.run(['systemctl', '--failed', '--no-legend'], { timeoutMs: 10_000 })).stdout
        await m.stop()
        throw fail(`not booted within ${(opts.timeoutMs ?? BOOT_TIMEOUT_MS) / 1000} s (is-system-running: ${state || r.stderr.trim()}; failed units: ${failed.trim() || 'none'})`)
      }
      await Bun.sleep(100)
    }
    m.bootMs = Math.round(performance.now() - started)
    return m
  }

  /** The boot console so far (for failure messages). */
  console(): string {
    return this.out()
  }

  /** `path` inside the machine, as a host path (through /proc/PID/root). */
  path(p: string): string {
    return `/proc/${this.pid}/root${p.startsWith('/') ? p : `/${p}`}`
  }

  /** The argv that runs `cmd` inside the machine with a clean environment. */
  argv(cmd: string[], env: Record<string, string> = {}): string[] {
    const vars = Object.entries({ PATH: MACHINE_PATH, HOME: '/root', LANG: 'C.UTF-8', ...env }).map(([k, v]) => `${k}=${v}`)
    return ['nsenter', '-t', String(this.pid), '-a', '--', 'env', '-i', ...vars, ...cmd]
  }

  /** Runs `cmd` inside the machine to completion (killed after `timeoutMs`, default 60 s). */
  async run(cmd: string[], opts: { env?: Record<string, string>; stdin?: string; timeoutMs?: number } = {}): Promise<Ran> {
    const p = Bun.spawn(this.argv(cmd, opts.env), { stdin: opts.stdin === undefined ? 'ignore' : new TextEncoder().encode(opts.stdin), stdout: 'pipe', stderr: 'pipe' })
    const timer = setTimeout(() => p.kill('SIGKILL'), opts.timeoutMs ?? 60_000)
    const [stdout, stderr, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited])
    clearTimeout(timer)
    return { code, stdout, stderr }
  }

  /** `sh -c script` inside the machine. */
  sh(script: string, opts: { env?: Record<string, string>; stdin?: string; timeoutMs?: number } = {}): Promise<Ran> {
    return this.run(['sh', '-c', script], opts)
  }

  /** Kills the machine at once (every process in it ends with its PID 1). */
  kill(): void {
    if (this.stopped) return
    this.stopped = true
    for (const pid of [this.pid, this.proc.pid]) {
      try {
        process.kill(pid, 'SIGKILL')
      } catch {}
    }
  }

  /** Kills the machine and waits for nspawn to end (its mounts and overlay go with it). Idempotent. */
  async stop(): Promise<void> {
    this.kill()
    const t = setTimeout(() => this.proc.kill('SIGKILL'), 10_000)
    await this.proc.exited
    clearTimeout(t)
    this.forget()
  }

  private forget(): void {
    this.stopped = true
    running.delete(this)
  }
}

/** The child of `nspawnPid` that is PID 1 of its own namespace, or 0. */
function initOf(nspawnPid: number): number {
  let children: string[] = []
  try {
    children = readFileSync(`/proc/${nspawnPid}/task/${nspawnPid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean)
  } catch {
    return 0
  }
  for (const c of children) {
    try {
      const nspid = /^NSpid:\s+(.*)$/m.exec(readFileSync(`/proc/${c}/status`, 'utf8'))?.[1]?.trim().split(/\s+/)
      if (nspid && nspid.length >= 2 && nspid[nspid.length - 1] === '1') return Number(c)
    } catch {}
  }
  return 0
}

if (import.meta.main && process.argv.includes('--build')) {
  const root = await bookwormRoot()
  const built = lastBuild as { ms: number } | null
  process.stderr.write(`machines: ${root} ${built ? `built in ${(built.ms / 1000).toFixed(1)} s` : 'was cached'}\n`)
}
