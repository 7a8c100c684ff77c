// The compiled binary for end-to-end tests: dist/muster, built once if missing,
// and a runner that captures output and always ends the process.
import { existsSync } from 'node:fs'
import { killServeHard as killServe } from '../../src/swap/kill.ts'
import { join, resolve } from 'node:path'

const ROOT = resolve(import.meta.dir, '../..')
let built: Promise<string> | undefined

export function musterBin(): Promise<string> {
  built ??= (async () => {
    const bin = join(ROOT, 'dist', 'muster')
    if (!existsSync(bin) || process.env.MUSTER_TEST_REBUILD) {
      const p = Bun.spawn(['bun', 'run', 'build'], { cwd: ROOT, stdout: 'ignore', stderr: 'inherit' })
      if ((await p.exited) !== 0) throw new Error('bun run build failed')
    }
    return bin
  })()
  return built
}

export interface RunResult {
  code: number
  stdout: string
  stderr: string
}

/** Runs `muster ARGS…` to completion. */
export async function runMuster(args: string[], opts: { env?: Record<string, string | undefined>; stdin?: string; timeoutMs?: number; cwd?: string; bin?: string } = {}): Promise<RunResult> {
  const bin = opts.bin ?? (await musterBin())
  const p = Bun.spawn([bin, ...args], {
    env: { ...process.env, NO_COLOR: '1', ...opts.env },
    stdin: opts.stdin === undefined ? 'ignore' : new TextEncoder().encode(opts.stdin),
    stdout: 'pipe',
    stderr: 'pipe',
    cwd: opts.cwd,
  })
  const timer = setTimeout(() => p.kill('SIGKILL'), opts.timeoutMs ?? 30_000)
  const [stdout, stderr, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited])
  clearTimeout(timer)
  return { code, stdout, stderr }
}

export interface Daemon {
  proc: Bun.Subprocess<'ignore', 'pipe', 'pipe'>
  /** Everything the process wrote to stderr so far. */
  log(): string
  waitForLog(re: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>
  /** Stops the process; an Agent's replicas (which outlive it) are then stopped too, so no test leaves any behind. */
  stop(signal?: NodeJS.Signals): Promise<number>
  /** Stops the process and nothing else: an Agent's replicas keep running. */
  stopLeavingReplicas(signal?: NodeJS.Signals): Promise<number>
  [Symbol.asyncDispose](): Promise<void>
}

/** Starts a long-running `muster …` (serve, agent) and collects its log. */
export async function startMuster(args: string[], opts: { env?: Record<string, string | undefined>; bin?: string } = {}): Promise<Daemon> {
  const bin = opts.bin ?? (await musterBin())
  const proc = Bun.spawn([bin, ...args], {
    env: { ...process.env, NO_COLOR: '1', MUSTER_LOG_LEVEL: '3', ...opts.env },
    stdin: 'ignore',
    stdout: 'pipe',
    stderr: 'pipe',
  })
  let out = ''
  let stoppedReplicas = false
  const pump = async (stream: ReadableStream<Uint8Array>) => {
    const dec = new TextDecoder()
    for await (const chunk of stream) out += dec.decode(chunk)
  }
  void pump(proc.stdout)
  void pump(proc.stderr)
  const d: Daemon = {
    proc,
    log: () => out,
    async waitForLog(re, timeoutMs = 60_000) {
      const deadline = Date.now() + timeoutMs
      for (;;) {
        const m = out.match(re)
        if (m) return m
        if (proc.exitCode !== null) throw new Error(`muster ${args[0]} exited (${proc.exitCode}) before logging ${re}:\n${out}`)
        if (Date.now() > deadline) throw new Error(`timed out waiting for ${re} in:\n${out}`)
        await Bun.sleep(20)
      }
    },
    async stopLeavingReplicas(signal = 'SIGTERM') {
      if (proc.exitCode === null) {
        proc.kill(signal)
        const t = setTimeout(() => proc.kill('SIGKILL'), 10_000)
        await proc.exited
        clearTimeout(t)
      }
      return proc.exitCode ?? -1
    },
    async stop(signal = 'SIGTERM') {
      const code = await d.stopLeavingReplicas(signal)
      const dataDir = args[0] === 'agent' ? args[args.indexOf('--data-dir') + 1] : undefined
      if (dataDir && !stoppedReplicas) {
        stoppedReplicas = true
        await runMuster(['agent', '--stop-replicas', '--data-dir', dataDir], { timeoutMs: 60_000 })
      }
      return code
    },
    async [Symbol.asyncDispose]() {
      await d.stop()
    },
  }
  return d
}

/** kill -9 of a running `muster serve` as a crash would do it: the engine first, then the supervisor (src/swap/kill.ts). */
export const killServeHard = (d: { proc: Bun.Subprocess }): Promise<void> => killServe(d.proc)

/** Starts `muster serve` on a free loopback port and returns its URL once it listens. */
export async function startServe(dataDir: string, extra: string[] = [], env?: Record<string, string>, bin?: string) {
  const d = await startMuster(['serve', '--data-dir', dataDir, ...(extra.includes('--port') ? [] : ['--port', '0']), ...extra], { env, bin })
  const m = await d.waitForLog(/listening on (https?:\/\/[^\s"]+)/)
  return Object.assign(d, { url: m[1]! })
}

/**
 * `muster serve` with its enrollment listener on 127.0.0.1: its log's listener
 * URL and pin, and a superadmin token's client environment.
 */
export async function startServeWithListener(dataDir: string, extra: string[] = [], env?: Record<string, string>) {
  const serve = await startServe(dataDir, ['--enrollment-port', '0', '--enrollment-address', '127.0.0.1', ...extra], { MUSTER_PROBE_INTERVAL_MS: '300', ...env })
  const [, enrollUrl, fingerprint] = (await serve.waitForLog(/enrollment listener on (https:\/\/\S+) .*fingerprint (sha256:[0-9a-f]{64})/)) as unknown as [string, string, string]
  const { token } = JSON.parse((await runMuster(['admin', 'api-token', '--data-dir', dataDir, '--json'])).stdout) as { token: string }
  return Object.assign(serve, { enrollUrl, fingerprint, env: { MUSTER_URL: serve.url, MUSTER_TOKEN: token } })
}

/** `muster worker join` through the pinned listener (the data directory is `dir/node`), then its Agent; `extra` goes to the join. */
export async function joinWorker(dir: string, node: string, listener: { enrollUrl: string; fingerprint: string }, token: string, extra: string[] = []): Promise<Daemon> {
  const { freePort } = await import('../../src/addresses.ts')
  const data = `${dir}/${node}`
  const joined = await runMuster(
    ['worker', 'join', '--platform-url', listener.enrollUrl, '--node-id', node, '--platform-fingerprint', listener.fingerprint, '--address', '127.0.0.1', '--port', String(await freePort()), '--data-dir', data, ...extra],
    { env: { MUSTER_ENROLLMENT_TOKEN: token } },
  )
  if (joined.code !== 0) throw new Error(`worker join ${node} exited ${joined.code}: ${joined.stderr}`)
  return startMuster(['agent', '--data-dir', data], { env: { MUSTER_AGENT_HOST: '127.0.0.1', MUSTER_AGENT_HEARTBEAT_MS: '300' } })
}
