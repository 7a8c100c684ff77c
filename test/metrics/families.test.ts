// Each metric family of the Platform, read through a real Prometheus
// (docs/monitoring.md): an in-process Platform on loopback, scraped every
// 250 ms with a `metrics` token from a credentials_file. A test does what the
// family counts (enrolls, heartbeats, renewals, a revocation, API requests,
// a deploy, provider calls) and waits until Prometheus has read the change it
// expects, computed from what the test did or from the Platform's own
// records (the CA certificate, the published trust keys), never from text the
// test wrote. test/mutants/metrics.ts plants a bug in each family's count.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { X509Certificate } from 'node:crypto'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { send } from '../../src/cloud/http.ts'
import { signRenewProof } from '../../src/crypto/enroll-proof.ts'
import { reportRolloutNodes } from '../../src/metrics/platform.ts'
import { VERSION } from '../../src/version.ts'
import { enrollRaw, newCert } from '../helpers/certs.ts'
import { startPlatform, type TestPlatform } from '../helpers/platform.ts'
import { promtool, startPrometheus, type Prometheus } from '../helpers/prometheus.ts'
import { tmpDir } from '../helpers/tmp.ts'

const DAY = 86_400_000
let p: TestPlatform
let prom: Prometheus
let metricsToken: string
const dir = tmpDir('muster-metrics-')

beforeAll(async () => {
  p = await startPlatform({ remoteDispatch: true })
  metricsToken = (await p.platform.auth.mintApiToken({ name: 'prometheus', role: 'metrics' })).token
  const tokenFile = join(dir.path, 'token')
  writeFileSync(tokenFile, metricsToken, { mode: 0o600 })
  const target = new URL(p.url).host
  // A change shows within a scrape or two (250 ms each); 15 s is room for a busy machine.
  prom = await startPrometheus({
    interval: '250ms',
    waitMs: 15_000,
    scrapeConfigs: ['scrape_configs:', '  - job_name: muster-platform', '    authorization:', `      credentials_file: ${tokenFile}`, '    static_configs:', `      - targets: ['${target}']`].join('\n'),
  })
  await prom.waitValue('up{job="muster-platform"}', (v) => v === 1)
})
afterAll(async () => {
  await prom?.stop()
  await p?.close()
  dir[Symbol.dispose]()
})

const post = (path: string, credential: string, body: unknown = {}) =>
  fetch(`${p.url}${path}`, { method: 'POST', headers: { authorization: `Bearer ${credential}`, 'content-type': 'application/json' }, body: JSON.stringify(body) })

async function enrolled(nodeId: string) {
  const e = await p.client.nodes.createEnrollment({ nodeId })
  const cert = await newCert(nodeId)
  const r = await enrollRaw(p.url, { token: e.token, nodeId, certPem: cert.certPem, version: VERSION })
  expect(r.status).toBe(200)
  return { ...((await r.json()) as { credential: string }), cert }
}

const beat = (credential: string, body: Record<string, unknown> = {}) => post('/api/v1/nodes/register', credential, { version: VERSION, capacity: { cpuMillis: 4000, memoryMB: 8192 }, ...body })

/** The value Prometheus holds now (0 for a series it has not seen). */
const now = async (expr: string) => (await prom.value(expr)) ?? 0
/** Waits until Prometheus has read `expr` at `before + delta`. */
const moved = (expr: string, before: number, delta: number) => prom.waitValue(expr, (v) => v === before + delta)

describe('GET /metrics: who may scrape', () => {
  test('anonymous 401, node credential and session 403, any API token 200; a metrics token reads nothing else', async () => {
    expect((await fetch(`${p.url}/metrics`)).status).toBe(401)
    const w = await enrolled('auth-node')
    expect((await fetch(`${p.url}/metrics`, { headers: { authorization: `Bearer ${w.credential}` } })).status).toBe(403)
    const password = readFileSync(join(p.dataDir, 'platform/initial-superadmin-password'), 'utf8').trim()
    const login = await fetch(`${p.url}/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ identifier: 'superadmin', password }) })
    const cookie = login.headers.get('set-cookie')!.split(';')[0]!
    expect((await fetch(`${p.url}/api/v1/whoami`, { headers: { cookie } })).status).toBe(200)
    expect((await fetch(`${p.url}/metrics`, { headers: { cookie } })).status).toBe(403)
    expect((await fetch(`${p.url}/metrics`, { headers: { authorization: `Bearer ${p.token}` } })).status).toBe(200)
    const viewer = (await p.platform.auth.mintApiToken({ name: 'v', role: 'viewer' })).token
    expect((await fetch(`${p.url}/metrics`, { headers: { authorization: `Bearer ${viewer}` } })).status).toBe(200)
    const m = { authorization: `Bearer ${metricsToken}` }
    expect((await fetch(`${p.url}/metrics`, { headers: m })).status).toBe(200)
    for (const [method, path] of [['GET', '/api/v1/whoami'], ['GET', '/api/v1/api-tokens'], ['POST', '/api/v1/api-tokens'], ['GET', '/api/v1/nodes'], ['GET', '/api/v1/overview']] as const) {
      const r = await fetch(`${p.url}${path}`, { method, headers: { ...m, 'content-type': 'application/json' }, body: method === 'POST' ? '{}' : undefined })
      expect(`${method} ${path} ${r.status}`).toBe(`${method} ${path} 403`)
    }
  })

  test('the text answer passes promtool; OpenMetrics when Accept prefers it (Prometheus scrapes that)', async () => {
    const text = await fetch(`${p.url}/metrics`, { headers: { authorization: `Bearer ${metricsToken}` } })
    expect(text.headers.get('content-type')).toStartWith('text/plain; version=0.0.4')
    expect(await promtool(['check', 'metrics'], await text.text())).toEqual({ code: 0, out: '' })
    const om = await fetch(`${p.url}/metrics`, { headers: { authorization: `Bearer ${metricsToken}`, accept: 'application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5' } })
    expect(om.headers.get('content-type')).toStartWith('application/openmetrics-text; version=1.0.0')
    // Prometheus scraped that format all along: its samples are in.
    await prom.waitValue('count({job="muster-platform", __name__=~"muster_.+"})', (v) => v > 40)
  })
})

describe('the families, as Prometheus reads them', () => {
  test('nodes by state, compatibility and heartbeat age; heartbeats; refused heartbeats', async () => {
    const [a, b] = [await enrolled('fam-a'), await enrolled('fam-b')]
    await enrolled('fam-c') // enrolled, never heartbeats
    const beats = await now('muster_heartbeats_total')
    for (let i = 0; i < 3; i++) {
      expect((await beat(a.credential)).status).toBe(200)
      expect((await beat(b.credential)).status).toBe(200)
    }
    await moved('muster_heartbeats_total', beats, 6)
    const listed = (await p.client.nodes.list()).counts
    await prom.waitValue('muster_nodes{state="ready"}', (v) => v === listed.ready)
    expect(listed.ready).toBeGreaterThanOrEqual(2)
    expect(await now('muster_nodes{state="enrolled"}')).toBe(listed.enrolled)
    expect(await now('sum(muster_nodes)')).toBe(listed.total)
    expect(await now('sum(muster_nodes_by_compatibility)')).toBe(listed.total)
    expect(await now('muster_nodes_by_compatibility{compatibility="current"}')).toBe(listed.total)
    expect(await now('sum(muster_nodes_by_heartbeat_age)')).toBe(listed.total)
    const fresh = await now('muster_nodes_by_heartbeat_age{age="0-10s"}')
    expect(fresh).toBeGreaterThanOrEqual(2)
    // Ten minutes later by the Platform's clock the two are unreachable, their beats 5-15 minutes old.
    p.advance(10 * 60_000)
    await prom.waitValue('muster_nodes_by_heartbeat_age{age="5-15m"}', (v) => v === fresh)
    const later = (await p.client.nodes.list()).counts
    expect(later.unreachable).toBeGreaterThanOrEqual(2)
    expect(await now('muster_nodes{state="unreachable"}')).toBe(later.unreachable)
    expect(await now('muster_nodes_by_heartbeat_age{age="never"}')).toBe(later.enrolled)
    // A forged credential is refused, and counted by its code.
    const refused = await now('muster_heartbeat_refusals_total{code="unauthorized"}')
    const mac = a.credential.split('.')[2]!
    expect((await beat(a.credential.replace(mac, `${mac[0] === 'A' ? 'B' : 'A'}${mac.slice(1)}`))).status).toBe(401)
    await moved('muster_heartbeat_refusals_total{code="unauthorized"}', refused, 1)
  })

  test('enroll attempts by outcome, renewals, revocations', async () => {
    const q = (o: string) => `muster_enroll_attempts_total{outcome="${o}"}`
    const before = { enrolled: await now(q('enrolled')), refused: await now(q('refused')), invalid: await now(q('invalid')), newer: await now(q('worker-newer')) }
    const cert = await newCert('outcomes')
    expect((await enrollRaw(p.url, { token: `mjt_${'a'.repeat(16)}.${'b'.repeat(43)}`, nodeId: 'nope-1', certPem: cert.certPem })).status).toBe(403)
    expect((await enrollRaw(p.url, { token: 'x', nodeId: 'nope-2', certPem: cert.certPem })).status).toBe(403)
    expect((await enrollRaw(p.url, { token: 'x', nodeId: 'Not A Name', certPem: cert.certPem })).status).toBe(400)
    const e = await p.client.nodes.createEnrollment({ nodeId: 'newer' })
    expect((await enrollRaw(p.url, { token: e.token, nodeId: 'newer', certPem: cert.certPem, version: '99.0.0' })).status).toBe(409)
    const w = await enrolled('renewer')
    await moved(q('refused'), before.refused, 2)
    await moved(q('invalid'), before.invalid, 1)
    await moved(q('worker-newer'), before.newer, 1)
    await moved(q('enrolled'), before.enrolled, 1)

    const renewed = await now('muster_renewals_total{outcome="renewed"}')
    const proof = signRenewProof({ keyPem: w.cert.keyPem, certPem: w.cert.certPem, nodeId: 'renewer', generation: 1, nowMs: p.platform.now() })
    expect((await post('/api/v1/nodes/renew', w.credential, proof)).status).toBe(200)
    await moved('muster_renewals_total{outcome="renewed"}', renewed, 1)

    const revoked = await now('muster_revocations_total')
    await p.client.nodes.revoke('renewer')
    await moved('muster_revocations_total', revoked, 1)
  })

  test('API requests by route template and status class, with latency', async () => {
    const route = (r: string, code: string) => `muster_http_requests_total{method="POST",route="${r}",code="${code}"}`
    const before = await now(route('/api/v1/nodes/:name/revoke', '4xx'))
    const unmatched = await now('sum(muster_http_requests_total{route="unmatched"})')
    const timed = await now('sum(muster_http_request_duration_seconds_count{route="/api/v1/nodes/:name/revoke"})')
    for (const name of ['ghost-1', 'ghost-2', 'ghost-3']) expect((await post(`/api/v1/nodes/${name}/revoke`, p.token)).status).toBe(404)
    expect((await fetch(`${p.url}/no/such/route`)).status).toBe(404)
    await moved(route('/api/v1/nodes/:name/revoke', '4xx'), before, 3)
    await moved('sum(muster_http_requests_total{route="unmatched"})', unmatched, 1)
    await moved('sum(muster_http_request_duration_seconds_count{route="/api/v1/nodes/:name/revoke"})', timed, 3)
    // No raw path is a label: the node names asked for appear nowhere.
    expect(await prom.query('{__name__=~"muster_.+", route=~".*ghost.*"}')).toEqual([])
  })

  test('replicas wanted, placed, running and short; the assignment revision', async () => {
    const w = await enrolled('runner')
    expect((await beat(w.credential)).status).toBe(200)
    const revision = await now('muster_assignment_revision')
    await p.client.projects.deploy({ name: 'metrics-web', replicas: 2, cpu: 100, memory: 64, command: ['sleep', '60'] })
    await p.client.projects.deploy({ name: 'metrics-huge', replicas: 1, cpu: 1_000_000, memory: 64, command: ['sleep', '60'] })
    const shown = await p.client.projects.show('metrics-web')
    const placed = shown.placements.filter((x) => x.node !== null)
    // The only ready node runs both: one reported running, the other failed.
    expect(placed.map((x) => x.node)).toEqual(['runner', 'runner'])
    const [one, two] = placed as [(typeof placed)[0], (typeof placed)[0]]
    const replicas = [
      { project: 'metrics-web', replica: one.replica, state: 'running', revision: shown.revision },
      { project: 'metrics-web', replica: two.replica, state: 'failed', revision: shown.revision },
    ]
    expect((await beat(w.credential, { replicas })).status).toBe(200)
    const all = await p.client.projects.listAll()
    const wanted = all.reduce((n, x) => n + x.replicas, 0)
    await prom.waitValue('muster_project_replicas{state="wanted"}', (v) => v === wanted)
    expect(await now('muster_projects')).toBe(all.length)
    await prom.waitValue('muster_project_replicas{state="running"}', (v) => v === 1)
    expect(await now('muster_project_replicas{state="short"}')).toBe((await p.client.projects.shortfall()).total)
    expect(await now('muster_project_replicas{state="short"}')).toBeGreaterThanOrEqual(1)
    expect(await now('muster_project_replicas{state="placed"}')).toBe(all.flatMap((x) => x.placements).filter((x) => x.node !== null).length)
    await prom.waitValue('muster_assignment_revision', (v) => v > revision)
  })

  test('the store: statements timed per engine; the leases this Platform holds', async () => {
    const statements = await now('muster_store_query_duration_seconds_count{engine="sqlite"}')
    await p.client.nodes.createEnrollment({ nodeId: 'store-1' })
    await prom.waitValue('muster_store_query_duration_seconds_count{engine="sqlite"}', (v) => v > statements)
    // On SQLite one Platform holds every lease: each was acquired once, none lost.
    const leases = await prom.query('muster_leases_held')
    expect(leases.length).toBeGreaterThanOrEqual(5)
    expect(leases.every((s) => s.value === 1)).toBe(true)
    expect(leases.map((s) => s.metric.lease)).toContain('placement')
    expect(await now('sum(muster_lease_changes_total{change="acquired"})')).toBe(leases.length)
    expect(await now('sum(muster_lease_changes_total{change="lost"})')).toBe(0)
    expect(await now('muster_platforms_live')).toBe(1)
  })

  test('cloud provider calls by outcome, and their retries', async () => {
    let calls = 0
    // A provider API that throttles the first request (with the reset it asks for), then answers.
    await using api = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: () => (++calls === 1 ? Response.json({ error: { code: 'rate_limit_exceeded' } }, { status: 429, headers: { 'retry-after': '1' } }) : Response.json({ ok: true })) })
    const q = (o: string) => `muster_cloud_provider_calls_total{provider="hetzner",outcome="${o}"}`
    const before = { ok: await now(q('ok')), throttled: await now(q('throttled')), retries: await now('muster_cloud_provider_retries_total{provider="hetzner"}') }
    const a = await send('hetzner', `http://127.0.0.1:${api.port}/v1/servers`, { method: 'GET' }, { idempotent: true, policy: { attempts: 3, maxWaitMs: 5_000, baseMs: 1, capMs: 1, sleep: () => Promise.resolve() } })
    expect(a.status).toBe(200)
    expect(calls).toBe(2)
    await moved(q('throttled'), before.throttled, 1)
    await moved(q('ok'), before.ok, 1)
    await moved('muster_cloud_provider_retries_total{provider="hetzner"}', before.retries, 1)
    expect(await now('sum(muster_cloud_provisions)')).toBe((await p.client.cloud.provisions()).provisions.length)
  })

  test("trust keys: seconds until the signing key hands over; the CA's expiry", async () => {
    // One key so far (the first): it signs for a year from its start, then its successor takes over.
    const { trustKeys } = await p.platform.fabric.trustKeys()
    expect(trustKeys).toHaveLength(1)
    const handover = Date.parse(trustKeys[0]!.notBefore) + 365 * DAY
    const rotation = await prom.waitValue('muster_trust_key_rotation_seconds', (v) => Math.abs(v - (handover - p.platform.now()) / 1000) < 5)
    expect(rotation).toBeGreaterThan(300 * 86_400)
    const ca = new X509Certificate(readFileSync(join(p.dataDir, 'platform/ca.pem')))
    await prom.waitValue('muster_ca_expiry_seconds', (v) => Math.abs(v - (Date.parse(ca.validTo) - p.platform.now()) / 1000) < 5)
  })

  test('rollouts: the nodes a registered rollout source counts, by state; every state read 0 before', async () => {
    expect((await prom.query('muster_rollout_nodes')).map((s) => [s.metric.state, s.value]).sort()).toEqual(['done', 'downloading', 'failed', 'installing', 'pending', 'restarting', 'rolled-back', 'skipped'].map((s) => [s, 0]))
    const forget = reportRolloutNodes(() => ({ downloading: 2, done: 5 }))
    try {
      await prom.waitValue('muster_rollout_nodes{state="done"}', (v) => v === 5)
      expect(await now('muster_rollout_nodes{state="downloading"}')).toBe(2)
    } finally {
      forget()
    }
  })

  test('process: CPU seconds, resident memory, open file descriptors, event-loop lag', async () => {
    expect(await prom.waitValue('process_open_fds', (v) => v > 3)).toBeGreaterThan(3)
    expect(await now('process_max_fds')).toBeGreaterThan(await now('process_open_fds'))
    expect(await now('process_resident_memory_bytes')).toBeGreaterThan(10_000_000)
    expect((await prom.query('process_cpu_seconds_total')).length).toBe(1)
    expect(await prom.value('nodejs_eventloop_lag_seconds')).toBeGreaterThanOrEqual(0)
  })
})
