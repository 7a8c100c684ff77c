// Shared bench plumbing: start the compiled Platform and the bare server as
// separate processes and read their RSS. Load comes from wrk (see *-wrk.sh)
// or from simulated Agents (bench/agents.ts).
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { killServeHard } from '../src/swap/kill.ts'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'

export const ROOT = resolve(import.meta.dir, '..')

export interface Proc {
  url: string
  pid: number
  stop(): Promise<void>
}

async function waitForUrl(p: Bun.Subprocess<'ignore', 'pipe', 'pipe'>, re: RegExp): Promise<string> {
  let out = ''
  const dec = new TextDecoder()
  const read = async (s: ReadableStream<Uint8Array>) => {
    for await (const c of s) out += dec.decode(c)
  }
  void read(p.stdout)
  void read(p.stderr)
  const deadline = Date.now() + 20_000
  for (;;) {
    const m = out.match(re)
    if (m) return m[1]!
    if (p.exitCode !== null || Date.now() > deadline) throw new Error(`process did not start:\n${out}`)
    await Bun.sleep(20)
  }
}

export async function startPlatform(extra: string[] = [], opts: { dataDir?: string } = {}): Promise<Proc & { dataDir: string; token: string }> {
  const bin = join(ROOT, 'dist', 'muster')
  if (!(await Bun.file(bin).exists())) throw new Error('build first: bun run build')
  const dataDir = opts.dataDir ?? mkdtempSync(join(tmpdir(), 'muster-bench-'))
  const p = Bun.spawn([bin, 'serve', '--data-dir', dataDir, '--port', '0', '--remote-dispatch', '--no-local-node', ...extra], {
    stdin: 'ignore',
    stdout: 'pipe',
    stderr: 'pipe',
    env: { ...process.env, MUSTER_LOG_LEVEL: '3' },
  })
  const url = await waitForUrl(p, /listening on (http:\/\/\S+)/)
  const minted = Bun.spawnSync([bin, 'admin', 'api-token', '--data-dir', dataDir, '--json'])
  const { token } = JSON.parse(minted.stdout.toString()) as { token: string }
  return {
    url,
    pid: p.pid,
    dataDir,
    token,
    async stop() {
      p.kill('SIGTERM')
      await p.exited
      rmSync(dataDir, { recursive: true, force: true })
    },
  }
}

export async function startBare(body: string): Promise<Proc> {
  const p = Bun.spawn(['bun', join(ROOT, 'bench', 'bare-server.ts'), body], { stdin: 'ignore', stdout: 'pipe', stderr: 'pipe' })
  const url = await waitForUrl(p, /listening on (http:\/\/\S+)/)
  return {
    url,
    pid: p.pid,
    async stop() {
      p.kill('SIGTERM')
      await p.exited
    },
  }
}

/** Resident set size of a process in MB (from /proc). */
export function rssMB(pid: number): number {
  const m = readFileSync(`/proc/${pid}/status`, 'utf8').match(/VmRSS:\s+(\d+) kB/)
  return m ? Number(m[1]) / 1024 : Number.NaN
}

/** Peak RSS (VmHWM) of a process in MB. */
export function peakRssMB(pid: number): number {
  const m = readFileSync(`/proc/${pid}/status`, 'utf8').match(/VmHWM:\s+(\d+) kB/)
  return m ? Number(m[1]) / 1024 : Number.NaN
}

/** The binary the benches start: `--bin PATH` (another build, to compare), else dist/muster. */
export function benchBin(): string {
  const i = process.argv.indexOf('--bin')
  return i > 0 ? resolve(process.argv[i + 1]!) : join(ROOT, 'dist', 'muster')
}

export interface Serving {
  url: string
  /** The serving engine (serve's child), whose CPU and memory are measured. */
  pid: number
  stop(): Promise<void>
  /** kill -9 of the engine, then of serve (a crash: no lease given up, no heartbeat flushed). */
  kill9(): Promise<void>
  /** What serve and its engine wrote to stderr so far. */
  stderr(): string
}

/**
 * `muster serve` from dist/muster on `dataDir`, port 0, nodes enabled, the enroll and heartbeat limits
 * out of the way, with as many files as this process may open (one per connection); `extra` is appended.
 */
export async function startServe(dataDir: string, extra: string[] = [], env: Record<string, string> = {}, bin = benchBin()): Promise<Serving> {
  const BIN = bin
  const quoted = extra.map((a) => `'${a.replace(/'/g, "'\\''")}'`).join(' ')
  const cmd = `ulimit -n "$(ulimit -Hn)"; exec "${BIN}" serve --data-dir "${dataDir}" --port 0 --remote-dispatch --no-local-node --enroll-rate 1000000 --enroll-burst 1000000 --enroll-in-flight 100000 --heartbeat-rate 10000000 --heartbeat-burst 100000000 ${quoted}`
  const p = Bun.spawn(['sh', '-c', cmd], { stdin: 'ignore', stdout: 'pipe', stderr: 'pipe', env: { ...process.env, MUSTER_LOG_LEVEL: '3', ...env } })
  let out = ''
  void (async () => {
    for await (const c of p.stderr) out += new TextDecoder().decode(c)
  })()
  const deadline = Date.now() + 120_000
  while (!/listening on (http:\/\/\S+)/.test(out)) {
    if (p.exitCode !== null || Date.now() > deadline) throw new Error(`serve did not start:\n${out}`)
    await Bun.sleep(50)
  }
  // serve supervises an engine child that does the serving (README, engine swap): measure the engine.
  const engine = Number(new TextDecoder().decode(Bun.spawnSync(['pgrep', '-n', '-P', String(p.pid)]).stdout).trim())
  return {
    url: out.match(/listening on (http:\/\/\S+)/)![1]!,
    pid: engine > 0 ? engine : p.pid,
    async stop() {
      if (p.exitCode !== null) return
      p.kill('SIGTERM')
      await p.exited
    },
    kill9: () => killServeHard(p),
    stderr: () => out,
  }
}
