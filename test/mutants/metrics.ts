// Metrics (docs/monitoring.md): who may scrape, and one planted bug in the
// count of each family. test/metrics/families.test.ts reads each family through
// a real Prometheus; test/e2e/prometheus.test.ts scrapes the compiled Platform
// and Agents with the documented configuration and makes the shipped alerts fire.
import type { Mutant } from './types.ts'

const FAMILIES = 'test/metrics/families.test.ts'
const E2E = 'test/e2e/prometheus.test.ts'
const PERMS = 'test/http/permissions.test.ts'

const family = (name: string, file: string, from: string, to: string, filter?: string, ci = false): Mutant => ({ name: `metrics: ${name}`, file, from, to, tests: [FAMILIES], ...(filter ? { filter } : {}), ...(ci ? { ci } : {}) })

export default [
  // ---- who may scrape ------------------------------------------------------------------------
  {
    name: 'metrics: anyone scrapes /metrics (the token check dropped)',
    file: 'src/http/routes/metrics.ts',
    from: 'const p = await platform.auth.authenticate(request.headers)\n    if (!p) {',
    to: "const p = (await platform.auth.authenticate(request.headers)) ?? ({ kind: 'api-token' } as const)\n    if (!p) {",
    tests: [FAMILIES, E2E],
    filter: 'who may scrape|real Prometheus',
    ci: true,
  },
  family('a session scrapes /metrics', 'src/http/routes/metrics.ts', "if (p.kind !== 'api-token') throw", "if (p.kind === ('none' as string)) throw", 'who may scrape'),
  {
    name: 'metrics: a metrics token reads whoami and its token list',
    file: 'src/auth/auth.ts',
    from: "if (p.role === 'metrics') throw new MusterError('forbidden', 'A metrics token reads GET /metrics only.')",
    to: '',
    tests: [FAMILIES, PERMS],
    filter: 'who may scrape|metrics token',
  },
  { name: 'metrics: the metrics role reads what a viewer reads', file: 'src/wire/permissions.ts', from: '  metrics: new Set(),', to: '  metrics: new Set(VIEW),', tests: [PERMS], filter: 'metrics token' },
  // ---- one count per family ------------------------------------------------------------------
  family('nodes counted in the wrong state', 'src/fabric/census.ts', '    c.states[state]++', "    c.states[state === 'enrolled' ? 'ready' : state]++", 'nodes by state', true),
  family('compatibility counted as unknown', 'src/fabric/census.ts', '    c.compatibility[compat]++', "    c.compatibility['unknown']++", 'nodes by state'),
  family('heartbeat age one bucket off', 'src/fabric/census.ts', 'while (age > AGE_BUCKETS[b]!.upTo) b++', 'while (age > AGE_BUCKETS[b]!.upTo) b++\n    if (b > 0) b--', 'nodes by state'),
  family('heartbeats not counted', 'src/fabric/heartbeat.ts', '  heartbeats.inc()\n', '', 'nodes by state', true),
  family('refused heartbeats not counted', 'src/http/heartbeat.ts', '  heartbeatRefusals.inc({ code: codeOf(e) })\n', '', 'nodes by state'),
  family('a refused enroll counted as an error', 'src/metrics/platform.ts', "if (code === 'enrollment-refused') return 'refused'", "if (code === 'enrollment-refused') return 'error'", 'enroll attempts', true),
  family('renewals not counted', 'src/metrics/platform.ts', "(answer) => (renewals.inc({ outcome: 'renewed' }), answer),", '(answer) => answer,', 'enroll attempts'),
  family('revocations not counted', 'src/fabric/fabric.ts', '    revocations.inc()\n', '', 'enroll attempts'),
  family('requests labelled by no route template', 'src/http/app.ts', ".onTransform({ as: 'global' }, ({ request, route }) => noteRoute(request, route))", ".onTransform({ as: 'global' }, () => {})", 'API requests', true),
  family('requests not timed', 'src/http/request-metrics.ts', 'httpDuration.observe({ method, route }, (performance.now() - started) / 1000)', 'void httpDuration', 'API requests'),
  family('wanted replicas miscounted', 'src/projects/service.ts', 'for (const p of this.projects.values()) c.wanted += p.replicas', 'for (const p of this.projects.values()) c.wanted += 1', 'replicas wanted'),
  family('running replicas of an old revision counted', 'src/projects/service.ts', "r.state === 'running' && (r.revision ?? p.revision) === p.revision)) c.running++", "r.state !== 'stopped')) c.running++", 'replicas wanted'),
  family('the assignment revision not followed', 'src/projects/service.ts', '    noteAssignmentRevision(w.revision)\n', '', 'replicas wanted'),
  family('SQLite statements timed as PostgreSQL ones', 'src/metrics/platform.ts', "storeQueryDuration.observe(engine === 'sqlite' ? SQLITE : POSTGRES,", 'storeQueryDuration.observe(POSTGRES,', 'the store'),
  family('leases read as not held', 'src/metrics/platform.ts', "g.set({ lease: l.name }, l.held ? 1 : 0)", "g.set({ lease: l.name }, 0)", 'the store'),
  family('lease changes not counted', 'src/context/leases.ts', "    leaseChanges.inc({ lease: this.name, change: held ? 'acquired' : this.owner.stopping ? 'released' : 'lost' })\n", '', 'the store'),
  family('a throttled provider call counted as refused', 'src/cloud/http.ts', "outcome: a.status < 300 ? 'ok' : (verdict?.kind ?? 'refused')", "outcome: a.status < 300 ? 'ok' : 'refused'", 'cloud provider'),
  family('provider retries not counted', 'src/cloud/http.ts', '    providerRetries.inc({ provider })\n    waited += wait\n    // A reset header', '    waited += wait\n    // A reset header', 'cloud provider'),
  family('the trust-key rotation read from the key\'s end', 'src/fabric/trust-schedule.ts', 'return next ? nb(next) : Math.min(nb(current) + SIGNING_MS, na(current) - HANDOVER_MS)', 'return next ? nb(next) : na(current)', 'trust keys'),
  family("the CA's expiry in milliseconds", 'src/metrics/platform.ts', "if (at !== undefined) g.set((at - (sources.now ?? Date.now)()) / 1000)\n})\n\nexport const ROLLOUT", "if (at !== undefined) g.set(at - (sources.now ?? Date.now)())\n})\n\nexport const ROLLOUT", 'trust keys'),
  family('a registered rollout source is not read', 'src/metrics/platform.ts', 'const by = (await (rolloutSource ?? sources.rolloutNodes)?.()) ?? {}', 'const by = (await sources.rolloutNodes?.()) ?? {}', 'rollouts'),
  family('no process metrics', 'src/metrics/platform.ts', '  sources = s\n  withProcessMetrics(platformRegistry)', '  sources = s', 'process'),
  {
    name: 'metrics: OpenMetrics counters without _total (Prometheus cannot read the scrape)',
    file: 'src/metrics/exposition.ts',
    from: "const name = counter ? `${family}_total` :",
    to: 'const name = counter ? family :',
    tests: [FAMILIES],
    filter: 'enroll attempts',
  },
  // ---- the Agent's, through the compiled binary ----------------------------------------------
  { name: 'metrics: the Agent counts no successful heartbeat', file: 'src/agent/agent.ts', from: "      agentHeartbeats.inc({ outcome: 'ok' })\n", to: '', tests: [E2E] },
  { name: 'metrics: the Agent counts no failed heartbeat', file: 'src/agent/agent.ts', from: "      agentHeartbeats.inc({ outcome: 'failed' })\n", to: '', tests: [E2E] },
  { name: 'metrics: the Agent counts no replica restart', file: 'src/replicas/runner.ts', from: '    replicaRestarts.inc()\n', to: '', tests: [E2E] },
  { name: 'metrics: the Agent metrics bind any address', file: 'src/agent/metrics-server.ts', from: 'if (!isLoopback(host) && !allowRemote) {', to: 'if (!isLoopback(host) && !allowRemote && host === "none") {', tests: [E2E] },
  // ---- logs ----------------------------------------------------------------------------------
  { name: 'logs: the Agent logs its renewed credential', file: 'src/agent/agent.ts', from: 'log.info(`node credential renewed (generation ${r.generation})`)', to: 'log.info(`node credential renewed (generation ${r.generation}): ${r.credential}`)', tests: ['test/e2e/json-logs.test.ts'], filter: 'human' },
  { name: 'logs: JSON lines drop the fields', file: 'src/log.ts', from: 'if (isFields(a)) {\n      for', to: 'if (isFields(a)) {\n      continue\n      for', tests: ['test/e2e/json-logs.test.ts'], filter: 'json' },
] satisfies Mutant[]
