// The two shipped alerts that need more than one Platform or more than one
// day (docs/monitoring.md), fired against the compiled Platform and read from
// a real Prometheus's /api/v1/alerts:
// - MusterLeaseLost: two Platforms share a PostgreSQL; the engine holding the
//   placement lease is stopped (SIGSTOP) until the other takes the lease, then
//   continued: it finds the lease gone, counts it lost, and the alert fires for
//   it. On the way, both report two Platforms live, PostgreSQL statements and
//   the change notices between them.
// - MusterCaExpiring: a Platform under libfaketime is moved 3,600 days ahead;
//   its CA (ten years) has under 90 days left and the alert fires.
import { afterAll, describe, expect, test } from 'bun:test'
import { copyFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { runMuster, startServe, type Daemon } from '../helpers/binary.ts'
import { freshDatabase } from '../helpers/postgres.ts'
import { rulesForTest, startPrometheus, type Prometheus } from '../helpers/prometheus.ts'
import { tmpDir, waitFor } from '../helpers/tmp.ts'

const LIBFAKETIME = '/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1'
const dirs: ReturnType<typeof tmpDir>[] = []
const daemons: Daemon[] = []
const proms: Prometheus[] = []
afterAll(async () => {
  for (const p of proms) await p.stop()
  for (const d of daemons.reverse()) await d.stop().catch(() => {})
  for (const d of dirs) d[Symbol.dispose]()
})

/** A plain-http Platform job scraping `targets` with a metrics token of `dataDir`. */
async function scrapeConfig(dir: string, dataDir: string, targets: string[]): Promise<string> {
  const { token } = JSON.parse((await runMuster(['admin', 'api-token', '--data-dir', dataDir, '--role', 'metrics', '--json'])).stdout) as { token: string }
  const file = join(dir, `token-${targets.length}`)
  writeFileSync(file, token, { mode: 0o600 })
  return ['scrape_configs:', '  - job_name: muster-platform', '    authorization:', `      credentials_file: ${file}`, '    static_configs:', `      - targets: [${targets.map((t) => `'${t}'`).join(', ')}]`].join('\n')
}

const firing = (prom: Prometheus, name: string, instance?: string) =>
  waitFor(async () => (await prom.alerts()).some((a) => a.labels.alertname === name && a.state === 'firing' && (!instance || a.labels.instance === instance)), { timeoutMs: 90_000, what: `${name} firing${instance ? ` for ${instance}` : ''}` })

/** The engine process serve runs (serve supervises it; the engine holds the leases). */
const engineOf = (d: Daemon) => Number(readFileSync(`/proc/${d.proc.pid}/task/${d.proc.pid}/children`, 'utf8').trim().split(/\s+/).at(-1))

describe('the alerts of several Platforms and of the years', () => {
  test('MusterLeaseLost fires for a Platform that stalled past its lease while another took it', { timeout: 240_000 }, async () => {
    const dir = tmpDir('muster-alert-lease-')
    dirs.push(dir)
    const db = await freshDatabase({ empty: true })
    try {
      const env = { MUSTER_LEASE_TTL_MS: '2000' }
      const a = await startServe(join(dir.path, 'a'), ['--database', db.url, '--no-local-node', '--remote-dispatch'], env)
      daemons.push(a)
      mkdirSync(join(dir.path, 'b/platform'), { recursive: true, mode: 0o700 })
      copyFileSync(join(dir.path, 'a/platform/master.key'), join(dir.path, 'b/platform/master.key'))
      const b = await startServe(join(dir.path, 'b'), ['--database', db.url, '--no-local-node', '--remote-dispatch'], env)
      daemons.push(b)
      const hosts = [new URL(a.url).host, new URL(b.url).host]
      const prom = await startPrometheus({ scrapeConfigs: await scrapeConfig(dir.path, join(dir.path, 'a'), hosts), ruleFiles: [rulesForTest(dir.path)] })
      proms.push(prom)
      await prom.waitValue('count(up{job="muster-platform"} == 1)', (v) => v === 2)
      await prom.waitValue('min(muster_platforms_live)', (v) => v === 2)
      // Every lease has one holder among the two.
      const names = await waitFor(async () => {
        const held = await prom.query('sum by (lease) (muster_leases_held)')
        return held.length >= 5 && held.every((s) => s.value === 1) ? held.map((s) => s.metric.lease) : undefined
      }, { what: 'one holder per lease' })
      expect(names).toContain('placement')
      // A change on one Platform is a notice the other receives; their statements are PostgreSQL's.
      const { token } = JSON.parse((await runMuster(['admin', 'api-token', '--data-dir', join(dir.path, 'a'), '--json'])).stdout) as { token: string }
      const received = (await prom.value(`muster_store_notices_total{direction="received",instance="${hosts[1]}"}`)) ?? 0
      const deploy = await fetch(`${a.url}/api/v1/projects`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'noticed', replicas: 1, cpu: 10, memory: 10, command: ['sleep', '60'] }) })
      expect(deploy.status).toBe(200)
      await prom.waitValue(`muster_store_notices_total{direction="received",instance="${hosts[1]}"}`, (v) => v > received)
      await prom.waitValue('min(muster_store_query_duration_seconds_count{engine="postgres"})', (v) => v > 0)
      expect((await prom.value('sum(muster_lease_changes_total{change="lost"})')) ?? 0).toBe(0)

      // The placement lease's holder stalls (SIGSTOP of its engine) until the other holds it, then goes on.
      const holder = (await prom.query('muster_leases_held{lease="placement"} == 1'))[0]!.metric.instance!
      const [stalled, other] = holder === hosts[0] ? [a, hosts[1]!] : [b, hosts[0]!]
      const engine = engineOf(stalled)
      process.kill(engine, 'SIGSTOP')
      try {
        await prom.waitValue(`muster_leases_held{lease="placement",instance="${other}"}`, (v) => v === 1, { timeoutMs: 60_000 })
      } finally {
        process.kill(engine, 'SIGCONT')
      }
      await prom.waitValue(`sum(muster_lease_changes_total{change="lost",instance="${holder}"})`, (v) => v >= 1, { timeoutMs: 60_000 })
      await firing(prom, 'MusterLeaseLost', holder)
      // The other took it: it lost nothing.
      expect((await prom.alerts()).some((x) => x.labels.alertname === 'MusterLeaseLost' && x.labels.instance === other)).toBe(false)
    } finally {
      for (const d of daemons.splice(0)) await d.stop().catch(() => {})
      await db.drop()
    }
  })

  test('MusterCaExpiring fires once the CA has under 90 days left (the clock moved 3,600 days)', { timeout: 180_000 }, async () => {
    expect(existsSync(LIBFAKETIME) ? 'installed' : `missing ${LIBFAKETIME}: apt-get install faketime`).toBe('installed')
    const dir = tmpDir('muster-alert-ca-')
    dirs.push(dir)
    const clock = join(dir.path, 'faketime')
    writeFileSync(clock, '+0d\n')
    const fake = { FAKETIME_TIMESTAMP_FILE: clock, FAKETIME_NO_CACHE: '1', DONT_FAKE_MONOTONIC: '1', LD_PRELOAD: LIBFAKETIME }
    const data = join(dir.path, 'platform')
    const serve = await startServe(data, ['--no-local-node'], fake)
    daemons.push(serve)
    const prom = await startPrometheus({ scrapeConfigs: await scrapeConfig(dir.path, data, [new URL(serve.url).host]), ruleFiles: [rulesForTest(dir.path)] })
    proms.push(prom)
    // Ten years less the days since it was made (none): nothing to say yet.
    await prom.waitValue('muster_ca_expiry_seconds / 86400', (v) => v > 3600)
    expect((await prom.alerts()).some((x) => x.labels.alertname === 'MusterCaExpiring')).toBe(false)
    writeFileSync(clock, '+3600d\n')
    const left = await prom.waitValue('muster_ca_expiry_seconds / 86400', (v) => v < 90)
    expect(left).toBeGreaterThan(0)
    await firing(prom, 'MusterCaExpiring')
  })
})
