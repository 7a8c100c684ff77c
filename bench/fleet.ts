// A fleet of N distinct enrolled nodes against a freshly started compiled
// Platform (docs/benchmarks.md). Each node has its own key, certificate, proof of key
// and credential (enrolled through the real enroll route), and sends exactly
// what the Agent sends (bench/agents.ts): a heartbeat every S seconds, and a GET
// of its assignments when the heartbeat answer says their revision moved.
//   bun run build && bun bench/fleet.ts --nodes 100000 --interval 10 --seconds 60
// Options: --connections C (default min(N, 16000)), --sources K (127.0.0.2…, default 8),
// --deploy R (deploy a project of R replicas a third into the run: R nodes fetch),
// --seed (write the N enrollments into the store, as bench/seed-fleet.ts says, instead of
// enrolling them through the route: minutes saved on a busy machine; the run is the same).
// --gc-log (the engine logs the collector's pauses: BUN_JSC_logGC=1; their sum and longest are printed),
// --bin PATH (another build's binary: run once with each to compare builds).
// The engine samples its event-loop lag every 10 ms (MUSTER_LOOP_LAG_FILE): printed beside the p99, with
// a histogram and what held the loop during each lag of 20 ms or more (bench/lag.ts).
// Ends with: fleet: nodes=N heartbeats/s=R p50=A ms p99=B ms errors=E rss=M MB lag_p99=L ms lag_max=X ms
import { down, Packed, percentile, runAgents, up } from './agents.ts'
import { gcText, lagText, readLag, summarize } from './lag.ts'
import { adminToken, enrollNodes, fleetToken } from './enroll-nodes.ts'
import { seedFleet } from './seed-fleet.ts'
import { identities } from './identities.ts'
import { ROOT, startServe, type Serving } from './lib.ts'
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'

const arg = (name: string, dflt: number) => {
  const i = process.argv.indexOf(`--${name}`)
  return i > 0 ? Number(process.argv[i + 1]) : dflt
}
const N = arg('nodes', 1000)
const INTERVAL_MS = arg('interval', 10) * 1000
const SECONDS = arg('seconds', 60)
const CONNECTIONS = Math.min(N, arg('connections', 16_000))
const SOURCES = arg('sources', 8)
const DEPLOY = arg('deploy', 0)
const say = (s: string) => process.stderr.write(s)
const loadavg = () => readFileSync('/proc/loadavg', 'utf8').split(' ')[0]!

// ---- the Platform ------------------------------------------------------------------

const BIN = join(ROOT, 'dist', 'muster')
if (Bun.spawnSync(['sh', '-c', `[ -x ${BIN} ] && [ -z "$(find ${ROOT}/src ${ROOT}/commands -newer ${BIN} -print -quit)" ]`]).exitCode !== 0) {
  say('building dist/muster… ')
  if (Bun.spawnSync(['bun', 'run', 'build'], { cwd: ROOT, stdout: 'ignore' }).exitCode !== 0) throw new Error('build failed')
}

const status = (pid: number, field: string) => Number(readFileSync(`/proc/${pid}/status`, 'utf8').match(new RegExp(`${field}:\\s+(\\d+)`))?.[1] ?? Number.NaN) / 1024
/** user+system CPU seconds of a process. */
/** user+system CPU seconds of a process's main thread (the event loop), from /proc/PID/task/PID. */
const loopCpuSeconds = (pid: number) => {
  const f = readFileSync(`/proc/${pid}/task/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')
  return (Number(f[11]) + Number(f[12])) / 100
}
const cpuSeconds = (pid: number) => {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')
  return (Number(f[11]) + Number(f[12])) / 100
}

const SEED = process.argv.includes('--seed')
// --keep DIR: prepare the fleet there once (data directory and credentials), and reuse it on later runs.
const keepAt = process.argv.indexOf('--keep')
const KEEP = keepAt > 0 ? process.argv[keepAt + 1] : undefined
const dataDir = KEEP ?? mkdtempSync(join(tmpdir(), 'muster-fleet-'))
const credentialsFile = join(dataDir, 'bench-credentials')
let credentials: string[]
let admin: string
let platform: Serving
if (KEEP && existsSync(credentialsFile)) {
  credentials = readFileSync(credentialsFile, 'utf8').split('\n').filter(Boolean)
  if (credentials.length !== N) throw new Error(`${dataDir} holds a fleet of ${credentials.length}, not ${N}`)
  admin = await adminToken(dataDir)
  say(`fleet: reusing the ${N} nodes in ${dataDir}\n`)
} else {
  platform = await startServe(dataDir)
  try {
    admin = await adminToken(dataDir)
    const ids = await identities(N, say)
    say(`fleet: ${SEED ? 'seeding' : 'enrolling'} ${N} nodes (load ${loadavg()})… `)
    const t0 = performance.now()
    if (SEED) {
      const token = await fleetToken(platform.url, admin, N)
      await platform.stop()
      credentials = await seedFleet(dataDir, token, Array.from({ length: N }, (_, i) => `node-${i}`), ids)
      say(`${N} seeded in ${((performance.now() - t0) / 1000).toFixed(1)} s\n`)
    } else {
      credentials = await enrollNodes({ url: platform.url, admin, count: N, log: say })
      say(`fleet: ${N} enrolls at ${(N / ((performance.now() - t0) / 1000)).toFixed(0)}/s; Platform RSS ${status(platform.pid, 'VmRSS').toFixed(0)} MB after enrolling\n`)
    }
  } finally {
    await platform.stop()
  }
  if (KEEP) writeFileSync(credentialsFile, `${credentials.join('\n')}\n`, { mode: 0o600 })
}
// The run is against a freshly started Platform holding the N enrolled nodes.
const GC_LOG = process.argv.includes('--gc-log')
const lagFile = join(mkdtempSync(join(tmpdir(), 'muster-fleet-lag-')), 'lag.json')
// --no-lag: the engine samples nothing (to see what the sampling itself costs).
const NO_LAG = process.argv.includes('--no-lag')
platform = await startServe(dataDir, [], { ...(NO_LAG ? {} : { MUSTER_LOOP_LAG_FILE: lagFile }), ...(GC_LOG ? { BUN_JSC_logGC: '1' } : {}) })
say(`fleet: Platform restarted with ${N} nodes; RSS ${status(platform.pid, 'VmRSS').toFixed(0)} MB\n`)

// ---- the simulated Agents (bench/agents.ts) ---------------------------------------------

/**
 * What an operator waits for at this size, timed halfway through the run (from this process, which also
 * runs the fleet: an upper bound): `nodes list`'s first page (1,000 nodes; the first listing counts the
 * nodes by state, the next ones find the counts kept), a look-up by name, and the dashboard's Nodes page (100 nodes).
 */
let listings = ''
async function timeListings(): Promise<void> {
  const get = async (path: string) => {
    const t = performance.now()
    const r = await fetch(`${platform.url}${path}`, { headers: { authorization: `Bearer ${admin}` } })
    const body = await r.text()
    return `${up(performance.now() - t, 1)} ms (${r.status}, ${body.length} bytes)`
  }
  const one = `node-${Math.floor(N / 2)}`
  const parts = [
    `nodes list first page ${await get('/api/v1/nodes')}`,
    `again ${await get('/api/v1/nodes')}`,
    `name look-up ${await get(`/api/v1/nodes?q=${one}&limit=1`)}`,
    `dashboard Nodes page ${await get('/api/v1/nodes?limit=100')}`,
  ]
  listings = parts.join(', ')
}

const loadBefore = loadavg()
const cpuBefore = cpuSeconds(platform.pid)
const loopBefore = loopCpuSeconds(platform.pid)
const rss: number[] = []
const rssTimer = setInterval(() => rss.push(status(platform.pid, 'VmRSS')), 1000)
let deployed = false
say(`fleet: running ${N} nodes every ${INTERVAL_MS / 1000} s for ${SECONDS} s (load ${loadBefore})\n`)
let lagBefore: ReturnType<typeof readLag> = null
let lagFrom = 0
let stderrFrom = 0
// The credentials in one buffer for the run (a string each: a million cells for the load generator's collector).
const packed = Packed.from(credentials)
credentials = []
const result = await runAgents({
  onStart: () => {
    lagBefore = readLag(lagFile)
    lagFrom = Date.now() - 1000
    stderrFrom = platform.stderr().length
  },
  targets: [platform.url],
  credentials: packed,
  names: [],
  firstTarget: () => 0,
  intervalMs: INTERVAL_MS,
  seconds: SECONDS,
  connectionsPerTarget: CONNECTIONS,
  sources: SOURCES,
  log: say,
  onSecond: (second) => {
    if (second === Math.floor(SECONDS / 2)) void timeListings()
    if (DEPLOY > 0 && !deployed && second >= SECONDS / 3) {
      deployed = true
      void fetch(`${platform.url}/api/v1/projects`, {
        method: 'POST',
        headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'fleet', command: ['sleep', '3600'], replicas: DEPLOY, cpu: 10, memory: 16 }),
      }).then(async (r) => say(`fleet: deployed ${DEPLOY} replicas: ${r.status} ${r.ok ? '' : await r.text()}\n`))
    }
  },
})
clearInterval(rssTimer)
const lagAfter = readLag(lagFile)
const lag = lagAfter ? summarize(lagBefore, lagAfter, lagFrom, Date.now()) : null
const gcLog = GC_LOG ? gcText('fleet:', platform.stderr().slice(stderrFrom), SECONDS) : ''
if (listings) say(`fleet: during the run: ${listings}\n`)
if (!existsSync(`/proc/${platform.pid}`)) say(`fleet: the engine ${platform.pid} is gone; what serve wrote:\n${platform.stderr().replace(/\[GC<[^\n]*\n?/g, '').slice(-3000)}\n`)
const platformCpu = cpuSeconds(platform.pid) - cpuBefore
const loopCpu = loopCpuSeconds(platform.pid) - loopBefore
const peak = status(platform.pid, 'VmHWM')
await platform.stop()
if (!KEEP) rmSync(dataDir, { recursive: true, force: true })
rmSync(dirname(lagFile), { recursive: true, force: true })

const { latencies, serverLatencies, assignLatencies, okBeats, assignmentFetches } = result
const pct = percentile
say(`fleet: expected ${result.expected} heartbeats, answered ${okBeats} with 200; statuses ${JSON.stringify(result.statuses)}\n`)
say(`fleet: Platform CPU ${up(platformCpu / SECONDS, 2)} cores = ${up((platformCpu * 1e6) / Math.max(1, okBeats + assignmentFetches), 1)} us a request, of it the event loop's thread ${up(loopCpu / SECONDS, 2)} cores = ${up((loopCpu * 1e6) / Math.max(1, okBeats + assignmentFetches), 1)} us a request; load generator ${up(result.loadGeneratorCpuSeconds / SECONDS, 2)} cores; RSS during the run max ${up(Math.max(...rss), 0)} MB, peak since start ${up(peak, 0)} MB; load ${loadBefore} before, ${loadavg()} after\n`)
say(`fleet: from the write to the answer (the wait for the schedule and the connection left out): p50 ${up(pct(serverLatencies, 0.5), 2)} ms p99 ${up(pct(serverLatencies, 0.99), 2)} ms\n`)
if (assignmentFetches > 0) say(`fleet: ${assignmentFetches} assignment fetches, p50 ${up(pct(assignLatencies, 0.5), 1)} ms p99 ${up(pct(assignLatencies, 0.99), 1)} ms\n`)
if (lag) say(`${lagText('fleet:', lag)}\n`)
if (gcLog) say(`${gcLog}\n`)
console.log(`fleet: nodes=${N} heartbeats/s=${down(okBeats / SECONDS, 0)} p50=${up(pct(latencies, 0.5), 2)} ms p99=${up(pct(latencies, 0.99), 2)} ms errors=${result.errors} rss=${up(peak, 0)} MB lag_p99=${lag ? up(lag.p99, 2) : '?'} ms lag_max=${lag ? up(lag.max, 1) : '?'} ms`)
process.exit(0)
