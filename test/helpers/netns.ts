// Hosts on a private network, made of Linux network namespaces
// (docs/testing.md): each host is a namespace with its loopback and one veth
// interface on 198.18.K.0/24; the other ends sit on a bridge inside a
// namespace of their own. Nothing is added to the machine's own network
// namespace (the veth pairs are made there and moved out at once), so no
// traffic can leave the machine. Needs root; `netnsUnavailable()` says why not.
//
// Names start with `fleet-<pid>-`, so a run that died is cleaned up by the
// next one (its pid is gone), and `destroy()` (afterAll; also on exit) kills
// every process in the namespaces and deletes them.
import { describe } from 'bun:test'
import { spawnSync } from 'node:child_process'
import { readdirSync, rmSync } from 'node:fs'

const PREFIX = 'fleet-'

function ip(args: string[]): { ok: boolean; err: string } {
  const r = spawnSync('ip', args, { encoding: 'utf8' })
  return { ok: r.status === 0, err: `${r.stderr ?? ''}${r.error?.message ?? ''}`.trim() }
}

function must(args: string[]): void {
  const r = ip(args)
  if (!r.ok) throw new Error(`ip ${args.join(' ')}: ${r.err}`)
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM'
  }
}

/** Why namespaces cannot be made here (not root, no `ip`), or null when they can. */
export function netnsUnavailable(): string | null {
  if (process.getuid?.() !== 0) return `network namespaces need root (running as uid ${process.getuid?.()})`
  const probe = `${PREFIX}${process.pid}-probe`
  const made = ip(['netns', 'add', probe])
  if (!made.ok) return `ip netns add failed: ${made.err}`
  ip(['netns', 'del', probe])
  return null
}

function namespaces(): string[] {
  const r = spawnSync('ip', ['netns', 'list'], { encoding: 'utf8' })
  return (r.stdout ?? '').split('\n').map((l) => l.split(' ')[0]!).filter(Boolean)
}

function deleteNamespace(ns: string): void {
  // Every process first (a namespace with processes in it lives on after `ip netns del`).
  for (let i = 0; i < 50; i++) {
    const pids = (spawnSync('ip', ['netns', 'pids', ns], { encoding: 'utf8' }).stdout ?? '').split('\n').map(Number).filter((n) => n > 0)
    if (pids.length === 0) break
    for (const pid of pids) {
      try {
        process.kill(pid, i < 10 ? 'SIGTERM' : 'SIGKILL')
      } catch {}
    }
    spawnSync('sleep', ['0.1'])
  }
  ip(['netns', 'del', ns])
  // what `ip netns exec` lays over /etc for it (a test's hosts file for metadata.google.internal)
  rmSync(`/etc/netns/${ns}`, { recursive: true, force: true })
}

/** Removes the namespaces of test runs whose process is gone (a run killed before its afterAll: the mutants runner's timeout). */
export function sweepStale(): void {
  const stale = (ns: string) => {
    const m = ns.match(/^fleet-(\d+)-/)
    return m !== null && Number(m[1]) !== process.pid && !alive(Number(m[1]))
  }
  for (const ns of namespaces()) if (stale(ns)) deleteNamespace(ns)
  let laid: string[] = []
  try {
    laid = readdirSync('/etc/netns')
  } catch {}
  for (const ns of laid) if (stale(ns)) rmSync(`/etc/netns/${ns}`, { recursive: true, force: true })
}

export interface Host {
  name: string
  ns: string
  address: string
  /** argv prefixed with `ip netns exec NS`. */
  argv(cmd: string[]): string[]
}

export class Network {
  private destroyed = false
  private readonly onExit = () => this.destroy()

  private constructor(
    readonly hosts: Host[],
    private readonly all: string[],
  ) {
    process.once('exit', this.onExit)
  }

  /**
   * Hosts named `names` on 198.18.`subnet`.0/24 (1–9 for this worktree): the
   * first gets .1, the next .2, and so on.
   */
  static create(names: string[], subnet = 1): Network {
    sweepStale()
    const base = `${PREFIX}${process.pid}-`
    const tag = (process.pid % 100_000).toString(36)
    const sw = `${base}sw`
    const made: string[] = []
    const hosts: Host[] = []
    try {
      must(['netns', 'add', sw])
      made.push(sw)
      must(['-n', sw, 'link', 'add', 'br0', 'type', 'bridge'])
      must(['-n', sw, 'link', 'set', 'br0', 'up'])
      names.forEach((name, i) => {
        const ns = `${base}${name}`
        must(['netns', 'add', ns])
        made.push(ns)
        must(['-n', ns, 'link', 'set', 'lo', 'up'])
        const [h, s] = [`fl${tag}h${i}`, `fl${tag}s${i}`]
        must(['link', 'add', h, 'type', 'veth', 'peer', 'name', s])
        must(['link', 'set', h, 'netns', ns])
        must(['link', 'set', s, 'netns', sw])
        must(['-n', ns, 'link', 'set', h, 'name', 'eth0'])
        const address = `198.18.${subnet}.${i + 1}`
        must(['-n', ns, 'addr', 'add', `${address}/24`, 'dev', 'eth0'])
        must(['-n', ns, 'link', 'set', 'eth0', 'up'])
        must(['-n', sw, 'link', 'set', s, 'master', 'br0'])
        must(['-n', sw, 'link', 'set', s, 'up'])
        hosts.push({ name, ns, address, argv: (cmd) => ['ip', 'netns', 'exec', ns, ...cmd] })
      })
    } catch (e) {
      for (const ns of made.reverse()) deleteNamespace(ns)
      throw e
    }
    return new Network(hosts, made)
  }

  /**
   * Hosts with nothing but their loopback (no link to anything): fake cloud machines, which reach
   * the Platform through test/fakes/ns-forward.ts and their metadata service on their own loopback.
   */
  static bare(names: string[]): Network {
    sweepStale()
    const base = `${PREFIX}${process.pid}-`
    const made: string[] = []
    const hosts: Host[] = []
    try {
      for (const name of names) {
        const ns = `${base}${name}`
        must(['netns', 'add', ns])
        made.push(ns)
        must(['-n', ns, 'link', 'set', 'lo', 'up'])
        hosts.push({ name, ns, address: '127.0.0.1', argv: (cmd) => ['ip', 'netns', 'exec', ns, ...cmd] })
      }
    } catch (e) {
      for (const ns of made.reverse()) deleteNamespace(ns)
      throw e
    }
    return new Network(hosts, made)
  }

  host(name: string): Host {
    const h = this.hosts.find((x) => x.name === name)
    if (!h) throw new Error(`no host ${name}`)
    return h
  }

  /** Kills every process in the namespaces and deletes them (idempotent). */
  destroy(): void {
    if (this.destroyed) return
    this.destroyed = true
    process.off('exit', this.onExit)
    for (const ns of [...this.all].reverse()) deleteNamespace(ns)
  }
}

export interface Ran {
  code: number
  stdout: string
  stderr: string
}

/** Runs `cmd` on `host` to completion (killed after `timeoutMs`). */
export async function runOn(host: Host, cmd: string[], opts: { env?: Record<string, string | undefined>; stdin?: string; timeoutMs?: number } = {}): Promise<Ran> {
  const p = Bun.spawn(host.argv(cmd), {
    env: { ...process.env, NO_COLOR: '1', ...opts.env },
    stdin: opts.stdin === undefined ? 'ignore' : new TextEncoder().encode(opts.stdin),
    stdout: 'pipe',
    stderr: 'pipe',
  })
  const timer = setTimeout(() => p.kill('SIGKILL'), opts.timeoutMs ?? 60_000)
  const [stdout, stderr, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited])
  clearTimeout(timer)
  return { code, stdout, stderr }
}

export interface Started {
  proc: Bun.Subprocess<'ignore', 'pipe', 'pipe'>
  log(): string
  waitForLog(re: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>
  stop(): Promise<void>
}

/** Starts a long-running `cmd` on `host` and collects its output (`ip netns exec` execs it: the pid is the command's). */
export function startOn(host: Host, cmd: string[], env: Record<string, string | undefined> = {}): Started {
  const proc = Bun.spawn(host.argv(cmd), { env: { ...process.env, NO_COLOR: '1', MUSTER_LOG_LEVEL: '3', ...env }, stdin: 'ignore', stdout: 'pipe', stderr: 'pipe' })
  let out = ''
  const pump = async (stream: ReadableStream<Uint8Array>) => {
    const dec = new TextDecoder()
    for await (const chunk of stream) out += dec.decode(chunk)
  }
  void pump(proc.stdout)
  void pump(proc.stderr)
  return {
    proc,
    log: () => out,
    async waitForLog(re, timeoutMs = 60_000) {
      const deadline = Date.now() + timeoutMs
      for (;;) {
        const m = out.match(re)
        if (m) return m
        if (proc.exitCode !== null) throw new Error(`${cmd.join(' ')} exited (${proc.exitCode}) before logging ${re}:\n${out}`)
        if (Date.now() > deadline) throw new Error(`timed out waiting for ${re} in:\n${out}`)
        await Bun.sleep(50)
      }
    },
    async stop() {
      if (proc.exitCode !== null) return
      proc.kill('SIGTERM')
      const t = setTimeout(() => proc.kill('SIGKILL'), 15_000)
      await proc.exited
      clearTimeout(t)
    },
  }
}

/** Processes running in `host`'s namespace now. */
export function pidsOn(host: Host): number[] {
  return (spawnSync('ip', ['netns', 'pids', host.ns], { encoding: 'utf8' }).stdout ?? '').split('\n').map(Number).filter((n) => n > 0)
}

/**
 * A describe block that runs only where namespaces can be made (root, `ip`);
 * elsewhere it is skipped with the reason in its name and one line on stderr.
 * Like describeAsRoot, its name ends in "[root]" when it runs (CI counts those).
 */
export function describeWithNetns(name: string, fn: () => void): void {
  const why = netnsUnavailable()
  if (!why) return describe(`${name} [root]`, fn)
  process.stderr.write(`skip: "${name}": ${why}; CI runs it as root\n`)
  describe.skip(`${name} [skipped: ${why}]`, fn)
}
