// Watching a fleet with a real Prometheus (docs/monitoring.md): the compiled
// Platform serves HTTPS from its CA with an enrollment listener, three workers
// join and run their Agents with --metrics-address, and Debian's Prometheus
// scrapes them every second with the scrape configuration docs/monitoring.md
// gives (a `metrics` token in a credentials_file, the CA as ca_file) and the
// shipped alerting rules (their `for:` shortened to 0 s). Everything read here
// is what Prometheus parsed of muster's answers: targets up, the ready count,
// refused enrolls, heartbeats; then the documented alerts fire as refusals
// spike, nodes stop and the Platform goes down. `promtool check metrics`
// passes on what the Platform and an Agent serve, and every query of the
// Grafana dashboard is one Prometheus accepts.
import { afterAll, describe, expect, test } from 'bun:test'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { runMuster, startMuster, startServe, type Daemon } from '../helpers/binary.ts'
import { newCert } from '../helpers/certs.ts'
import { freePort } from '../helpers/node-side.ts'
import { DASHBOARD_FILE, promtool, rulesForTest, scrapeConfigFromDocs, startPrometheus, type Prometheus } from '../helpers/prometheus.ts'
import { tmpDir, waitFor } from '../helpers/tmp.ts'

const dir = tmpDir('muster-prom-e2e-')
const daemons: Daemon[] = []
let prom: Prometheus | undefined
afterAll(async () => {
  await prom?.stop()
  for (const d of daemons.reverse()) await d.stop().catch(() => {})
  dir[Symbol.dispose]()
})

/** Every `expr` of the dashboard's panels, with Grafana's variables replaced as Grafana does (the job, a rate window). */
function dashboardQueries(): string[] {
  const d = JSON.parse(readFileSync(DASHBOARD_FILE, 'utf8')) as { panels: { title: string; targets?: { expr: string }[] }[] }
  return d.panels.flatMap((p) => (p.targets ?? []).map((t) => t.expr.replaceAll('$__rate_interval', '1m').replaceAll('$job', 'muster-platform')))
}

describe('a real Prometheus scrapes the compiled Platform and Agents with the documented configuration', () => {
  test('targets up, the fleet as counted, a refused enroll, heartbeats; the documented alerts fire', { timeout: 240_000 }, async () => {
    const data = join(dir.path, 'platform')
    const [apiPort, enrollPort] = [await freePort(), await freePort()]
    const api = `https://127.0.0.1:${apiPort}`
    // Off loopback the API serves HTTPS from the Platform CA: the scrape needs the CA file, as operators do.
    const serve = await startServe(data, ['--host', '0.0.0.0', '--port', String(apiPort), '--public-url', api, '--enrollment-port', String(enrollPort), '--enrollment-address', '127.0.0.1', '--no-local-node', '--node-stale-seconds', '3'], { MUSTER_PROBE_INTERVAL_MS: '300' })
    daemons.push(serve)
    const [, pin] = (await serve.waitForLog(/enrollment listener on .* fingerprint (sha256:[0-9a-f]{64})/)) as unknown as [string, string]
    const admin = JSON.parse((await runMuster(['admin', 'api-token', '--data-dir', data, '--json'])).stdout) as { token: string }
    const metrics = JSON.parse((await runMuster(['admin', 'api-token', '--data-dir', data, '--role', 'metrics', '--name', 'prometheus', '--json'])).stdout) as { token: string; role: string }
    expect(metrics.role).toBe('metrics')
    const tokenFile = join(dir.path, 'muster-metrics-token')
    writeFileSync(tokenFile, `${metrics.token}\n`, { mode: 0o600 })
    const caFile = join(data, 'platform/ca.pem')
    const ca = readFileSync(caFile, 'utf8')
    const env = { MUSTER_URL: api, MUSTER_TOKEN: admin.token, MUSTER_PLATFORM_FINGERPRINT: pin }
    const get = (path: string, token: string, accept?: string) => fetch(`${api}${path}`, { headers: { authorization: `Bearer ${token}`, ...(accept ? { accept } : {}) }, tls: { ca } })

    // The metrics token reads /metrics and nothing else; no token reads nothing.
    expect((await fetch(`${api}/metrics`, { tls: { ca } })).status).toBe(401)
    expect((await get('/metrics', metrics.token)).status).toBe(200)
    expect((await get('/api/v1/nodes', metrics.token)).status).toBe(403)
    expect((await get('/api/v1/whoami', metrics.token)).status).toBe(403)

    // Three workers join through the pinned listener; each Agent serves its metrics on loopback.
    const agentMetrics: string[] = []
    const agents: Daemon[] = []
    for (const name of ['w1', 'w2', 'w3']) {
      const { token } = JSON.parse((await runMuster(['nodes', 'enroll-token', name, '--json'], { env })).stdout) as { token: string }
      const work = join(dir.path, name)
      const joined = await runMuster(['worker', 'join', '--platform-url', `https://127.0.0.1:${enrollPort}`, '--node-id', name, '--platform-fingerprint', pin, '--address', '127.0.0.1', '--port', String(await freePort()), '--data-dir', work], { stdin: token })
      expect(joined.code).toBe(0)
      const at = `127.0.0.1:${await freePort()}`
      const agent = await startMuster(['agent', '--data-dir', work, '--metrics-address', at], { env: { MUSTER_AGENT_HOST: '127.0.0.1', MUSTER_AGENT_HEARTBEAT_MS: '300' } })
      daemons.push(agent)
      agents.push(agent)
      await agent.waitForLog(/agent metrics on http:\/\/127\.0\.0\.1:\d+\/metrics/)
      agentMetrics.push(at)
    }

    // promtool's lint passes on both answers, in the text format.
    const text = await (await get('/metrics', metrics.token, 'text/plain')).text()
    expect(await promtool(['check', 'metrics'], text)).toEqual({ code: 0, out: '' })
    const agentText = await (await fetch(`http://${agentMetrics[0]}/metrics`)).text()
    expect(await promtool(['check', 'metrics'], agentText)).toEqual({ code: 0, out: '' })
    // A non-loopback --metrics-address is refused unless meant.
    const remote = await runMuster(['agent', '--data-dir', join(dir.path, 'w1'), '--metrics-address', '0.0.0.0:9464'])
    expect(remote.code).not.toBe(0)
    expect(remote.stderr).toContain('--metrics-allow-remote')

    const rules = rulesForTest(dir.path)
    expect(await promtool(['check', 'rules', rules])).toMatchObject({ code: 0 })
    prom = await startPrometheus({ scrapeConfigs: scrapeConfigFromDocs({ platform: `127.0.0.1:${apiPort}`, tokenFile, caFile, agents: agentMetrics }), ruleFiles: [rules] })

    // Targets up: the Platform (over HTTPS, with the token) and the three Agents.
    await waitFor(
      async () => {
        const t = await prom!.targets()
        const up = t.filter((x) => x.health === 'up').map((x) => x.labels.job)
        if (up.length !== 4) throw new Error(JSON.stringify(t.map((x) => [x.scrapeUrl, x.health, x.lastError])))
        return up.filter((j) => j === 'muster-platform').length === 1
      },
      { timeoutMs: 60_000, what: 'every target up' },
    )
    // The fleet as Prometheus reads it: three ready nodes, all current, heartbeating.
    await prom.waitValue('muster_nodes{state="ready"}', (v) => v === 3, { timeoutMs: 60_000 })
    expect(await prom.value('muster_nodes_by_compatibility{compatibility="current"}')).toBe(3)
    await prom.waitValue('muster_heartbeats_total', (v) => v > 3)
    await prom.waitValue('sum(muster_agent_heartbeats_total{outcome="ok"})', (v) => v >= 3)
    expect(await prom.value('sum(muster_agent_node_state{state="ready"})')).toBe(3)
    // Each Agent refreshed its trust keys at start, and holds a key that has started.
    await prom.waitValue('min(muster_agent_trust_refresh_age_seconds)', (v) => v >= 0 && v < 120)
    expect(await prom.value('min(muster_agent_trust_key_age_seconds)')).toBeGreaterThanOrEqual(0)
    expect(await prom.value('sum(muster_agent_rollout_state{state="none"})')).toBe(3)
    await prom.waitValue('sum(muster_http_requests_total{route="/api/v1/nodes/enrollments",code="2xx"})', (v) => v === 3)
    await prom.waitValue('process_open_fds{job="muster-platform"}', (v) => v > 0)

    // Two projects: one whose replica runs, one whose replica exits at once and is restarted again and again.
    const deploy = (name: string, command: string[]) => fetch(`${api}/api/v1/projects`, { method: 'POST', headers: { authorization: `Bearer ${admin.token}`, 'content-type': 'application/json' }, body: JSON.stringify({ name, replicas: 1, cpu: 10, memory: 16, command }), tls: { ca } })
    expect((await deploy('sleeper', ['sleep', '300'])).status).toBe(200)
    expect((await deploy('crasher', ['sh', '-c', 'exit 3'])).status).toBe(200)
    await prom.waitValue('sum(muster_agent_replicas{state="running"})', (v) => v === 1, { timeoutMs: 60_000 })
    await prom.waitValue('muster_project_replicas{state="running"}', (v) => v === 1, { timeoutMs: 60_000 })
    expect(await prom.value('muster_project_replicas{state="wanted"}')).toBe(2)
    await prom.waitValue('sum(muster_agent_replica_restarts_total)', (v) => v >= 2, { timeoutMs: 60_000 })

    // Enroll attempts with a token that does not exist: refused, counted, and the spike alert fires.
    const cert = await newCert('guess')
    for (let i = 0; i < 25; i++) {
      const r = await fetch(`https://127.0.0.1:${enrollPort}/api/v1/nodes/enroll`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ token: `mjt_${'a'.repeat(16)}.${'b'.repeat(43)}`, nodeId: `guess-${i}`, certPem: cert.certPem }), tls: { ca } })
      expect(r.status).toBe(403)
    }
    // The listener does not serve the metrics.
    expect((await fetch(`https://127.0.0.1:${enrollPort}/metrics`, { headers: { authorization: `Bearer ${metrics.token}` }, tls: { ca } })).status).toBe(404)
    await prom.waitValue('muster_enroll_attempts_total{outcome="refused"}', (v) => v === 25)
    expect(await prom.value('muster_enroll_attempts_total{outcome="enrolled"}')).toBe(3)
    const firing = async (name: string) =>
      waitFor(async () => (await prom!.alerts()).some((a) => a.labels.alertname === name && a.state === 'firing'), { timeoutMs: 60_000, what: `${name} firing` })
    await firing('MusterEnrollRefusalsSpiking')
    expect((await prom.alerts()).some((a) => a.labels.alertname === 'MusterNodesUnreachable')).toBe(false)

    // Every query of the Grafana dashboard is one Prometheus accepts (and most have data by now).
    const queries = dashboardQueries()
    expect(queries.length).toBeGreaterThanOrEqual(6)
    let answered = 0
    for (const q of queries) if ((await prom.query(q)).length > 0) answered++
    expect(answered).toBeGreaterThanOrEqual(queries.length - 1)

    // Two of three nodes stop: they turn unreachable, and the unreachable-nodes alert fires.
    await agents[1]!.stop()
    await agents[2]!.stop()
    await prom.waitValue('muster_nodes{state="unreachable"}', (v) => v === 2, { timeoutMs: 60_000 })
    await firing('MusterNodesUnreachable')

    // The Platform goes down: its target turns down and the Platform-down alert fires.
    await serve.stop()
    await prom.waitValue('up{job="muster-platform"}', (v) => v === 0)
    await firing('MusterPlatformDown')
    // The Agent still running counts its failed heartbeats and backs off.
    await prom.waitValue('sum(muster_agent_heartbeats_total{outcome="failed"})', (v) => v > 0)
    await prom.waitValue('max(muster_agent_consecutive_failures)', (v) => v > 0)
    await prom.waitValue('max(muster_agent_backoff_seconds)', (v) => v > 0)
  })
})
