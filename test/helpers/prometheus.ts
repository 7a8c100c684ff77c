// A real Prometheus (Debian's `prometheus`) on loopback for the tests: a temp
// directory holds its configuration and data, it listens on a free port of
// 127.0.0.1, scrapes every `interval`, evaluates the rule files given, and is
// stopped (and its directory removed) by stop(). Queries go through its HTTP
// API, so what a test reads is what Prometheus parsed of muster's answers.
// The scrape configuration comes from docs/monitoring.md (scrapeConfigFromDocs):
// the tests use the page operators copy.
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { freePort } from '../../src/addresses.ts'
import { waitFor } from './tmp.ts'

const ROOT = resolve(import.meta.dir, '../..')
export const PROMETHEUS = '/usr/bin/prometheus'
export const PROMTOOL = '/usr/bin/promtool'
export const RULES_FILE = join(ROOT, 'docs/monitoring/muster-rules.yml')
export const DASHBOARD_FILE = join(ROOT, 'docs/monitoring/grafana-muster.json')

export interface Sample {
  metric: Record<string, string>
  value: number
}
export interface Target {
  labels: Record<string, string>
  health: 'up' | 'down' | 'unknown'
  lastError: string
  scrapeUrl: string
}
export interface Alert {
  labels: Record<string, string>
  state: 'pending' | 'firing'
}

export interface Prometheus {
  url: string
  dir: string
  /** An instant query; throws on a query Prometheus refuses. */
  query(expr: string): Promise<Sample[]>
  /** The one value of a query answering one series, else undefined. */
  value(expr: string): Promise<number | undefined>
  targets(): Promise<Target[]>
  alerts(): Promise<Alert[]>
  /** Waits until `expr` answers one series whose value passes `ok`. */
  waitValue(expr: string, ok: (v: number) => boolean, opts?: { timeoutMs?: number }): Promise<number>
  log(): string
  stop(): Promise<void>
  [Symbol.asyncDispose](): Promise<void>
}

/** The scrape configuration of docs/monitoring.md (the block between its `scrape-config` markers), with its placeholders replaced. */
export function scrapeConfigFromDocs(replace: { platform: string; tokenFile: string; caFile: string; agents: string[] }): string {
  const page = readFileSync(join(ROOT, 'docs/monitoring.md'), 'utf8')
  const m = /<!-- scrape-config -->\s*```yaml\n([\s\S]*?)```\s*<!-- \/scrape-config -->/.exec(page)
  if (!m) throw new Error('docs/monitoring.md has no scrape-config block')
  const swaps: [string, string][] = [
    ['platform.example.net:7380', replace.platform],
    ['/etc/prometheus/muster-metrics-token', replace.tokenFile],
    ['/etc/prometheus/muster-ca.pem', replace.caFile],
    ["'127.0.0.1:9464'", replace.agents.map((a) => `'${a}'`).join(', ')],
  ]
  let text = m[1]!
  for (const [from, to] of swaps) {
    if (!text.includes(from)) throw new Error(`docs/monitoring.md's scrape config no longer holds ${from}`)
    text = text.replaceAll(from, to)
  }
  return text
}

/**
 * The shipped rule file with every `for:` set to `forSeconds` (the expressions stay as shipped): a
 * test waits seconds, not the minutes an operator's alert holds before it fires.
 */
export function rulesForTest(dir: string, forSeconds = 0): string {
  const file = join(dir, 'muster-rules.yml')
  writeFileSync(file, readFileSync(RULES_FILE, 'utf8').replace(/^(\s+for:\s*).*$/gm, `$1${forSeconds}s`))
  return file
}

export async function startPrometheus(opts: { scrapeConfigs: string; ruleFiles?: string[]; interval?: string; dir?: string; /** waitValue's default deadline (30 s). */ waitMs?: number }): Promise<Prometheus> {
  if (!existsSync(PROMETHEUS)) throw new Error(`${PROMETHEUS} is missing: apt-get install prometheus (.ci/deps.sh installs it)`)
  const dir = opts.dir ?? mkdtempSync(join(tmpdir(), 'muster-prometheus-'))
  const interval = opts.interval ?? '1s'
  const config = [
    'global:',
    `  scrape_interval: ${interval}`,
    `  scrape_timeout: ${interval}`,
    `  evaluation_interval: ${interval}`,
    ...(opts.ruleFiles?.length ? ['rule_files:', ...opts.ruleFiles.map((f) => `  - ${JSON.stringify(f)}`)] : []),
    opts.scrapeConfigs,
  ].join('\n')
  writeFileSync(join(dir, 'prometheus.yml'), `${config}\n`)
  const port = await freePort()
  const proc = Bun.spawn([PROMETHEUS, `--config.file=${join(dir, 'prometheus.yml')}`, `--storage.tsdb.path=${join(dir, 'data')}`, `--web.listen-address=127.0.0.1:${port}`, '--log.level=warn', '--web.enable-lifecycle'], {
    stdin: 'ignore',
    stdout: 'pipe',
    stderr: 'pipe',
  })
  let out = ''
  const pump = async (s: ReadableStream<Uint8Array>) => {
    const dec = new TextDecoder()
    for await (const chunk of s) out += dec.decode(chunk)
  }
  void pump(proc.stdout)
  void pump(proc.stderr)
  const url = `http://127.0.0.1:${port}`
  let stopped = false
  const stop = async () => {
    if (stopped) return
    stopped = true
    proc.kill('SIGTERM')
    const t = setTimeout(() => proc.kill('SIGKILL'), 10_000)
    await proc.exited
    clearTimeout(t)
    if (!opts.dir) rmSync(dir, { recursive: true, force: true })
  }
  const api = async <T>(path: string): Promise<T> => {
    const r = await fetch(`${url}${path}`)
    const body = (await r.json()) as { status: string; data: T; error?: string }
    if (body.status !== 'success') throw new Error(`prometheus ${path}: ${body.error ?? r.status}`)
    return body.data
  }
  const query = async (expr: string): Promise<Sample[]> => {
    const data = await api<{ resultType: string; result: { metric: Record<string, string>; value: [number, string] }[] }>(`/api/v1/query?query=${encodeURIComponent(expr)}`)
    if (data.resultType !== 'vector') throw new Error(`prometheus: ${expr} answered a ${data.resultType}`)
    return data.result.map((r) => ({ metric: r.metric, value: Number(r.value[1]) }))
  }
  const value = async (expr: string) => {
    const r = await query(expr)
    return r.length === 1 ? r[0]!.value : undefined
  }
  try {
    await waitFor(
      async () => {
        if (proc.exitCode !== null) throw new Error(`prometheus exited (${proc.exitCode}):\n${out}`)
        return (await fetch(`${url}/-/ready`).catch(() => null))?.ok
      },
      { timeoutMs: 30_000, what: 'prometheus ready' },
    )
  } catch (e) {
    await stop()
    throw e
  }
  return {
    url,
    dir,
    query,
    value,
    targets: async () => (await api<{ activeTargets: Target[] }>('/api/v1/targets?state=active')).activeTargets,
    alerts: async () => (await api<{ alerts: Alert[] }>('/api/v1/alerts')).alerts,
    async waitValue(expr, ok, o = {}) {
      let last: number | undefined
      await waitFor(
        async () => {
          last = await value(expr)
          if (last === undefined || !ok(last)) throw new Error(`last answer ${last}`)
          return true
        },
        { timeoutMs: o.timeoutMs ?? opts.waitMs ?? 30_000, what: expr },
      )
      return last!
    },
    log: () => out,
    stop,
    [Symbol.asyncDispose]: stop,
  }
}

/** Runs promtool with `args` (stdin: `input`); its exit code and output. */
export async function promtool(args: string[], input?: string): Promise<{ code: number; out: string }> {
  const p = Bun.spawn([PROMTOOL, ...args], { stdin: input === undefined ? 'ignore' : new TextEncoder().encode(input), stdout: 'pipe', stderr: 'pipe' })
  const [o, e, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited])
  return { code, out: `${o}${e}` }
}
