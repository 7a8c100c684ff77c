// Several Platforms on one PostgreSQL as one (docs/storage-ha.md), under a fleet:
// N distinct enrolled nodes (bench/agents.ts: each with its own credential,
// sending exactly what the Agent sends at its interval) spread over P
// Platforms by the Agents' own first choice (a hash of the node's name), and,
// halfway through, kill -9 of one Platform (its engine, then serve): its
// nodes move to the next Platform of their list by themselves, as the Agent
// does, and a heartbeat counts as an error only when no Platform answered it.
//   bun run build && bun bench/ha.ts --platforms 3 --nodes 300000 --interval 30 --seconds 120 --seed
// Options: --kill-at S (seconds into the run; default half of it, 0: no kill), --seed (write the
// enrollments into the store instead of enrolling through the route: see bench/seed-fleet.ts),
// --connections C (to each Platform; default min(N, 15000 / P)), --sources K, --fsync off
// (the cluster's default is on), --bin PATH (another build's binary).
// Needs PostgreSQL's server binaries (a throwaway cluster is started and removed).
// Each engine samples its event-loop lag every 10 ms (MUSTER_LOOP_LAG_FILE): printed per Platform with
// what held the loop (bench/lag.ts); --gc-log adds the collector's pauses (BUN_JSC_logGC=1).
// Each Platform's RSS is sampled every second (its highest printed); at three quarters of the run (after
// the kill, the survivors carrying its nodes) `nodes list`'s first page and a look-up by name are timed on
// the second Platform.
// Ends with: ha: platforms=P nodes=N heartbeats/s=R p50=A ms p99=B ms errors=E lag_p99=L ms lag_max=X ms rss=M MB (the worst Platform's)
import { firstChoice } from '../src/agent/platform-choice.ts'
import { gcText, lagText, readLag, summarize, type LagSummary } from './lag.ts'
import { startThrowawayPostgres } from '../src/demo/postgres.ts'
import { down, Packed, percentile, runAgents, up } from './agents.ts'
import { adminToken, enrollNodes, fleetToken } from './enroll-nodes.ts'
import { identities } from './identities.ts'
import { peakRssMB, ROOT, rssMB, startServe, type Serving } from './lib.ts'
import { seedFleet } from './seed-fleet.ts'
import { chmodSync, copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

const arg = (name: string, dflt: number) => {
  const i = process.argv.indexOf(`--${name}`)
  return i > 0 ? Number(process.argv[i + 1]) : dflt
}
const P = arg('platforms', 2)
const N = arg('nodes', 1000)
const INTERVAL_MS = arg('interval', 30) * 1000
const SECONDS = arg('seconds', 60)
const KILL_AT = P > 1 ? arg('kill-at', Math.floor(SECONDS / 2)) : 0
const CONNECTIONS = Math.max(1, Math.min(N, arg('connections', Math.floor(15_000 / P))))
const SOURCES = arg('sources', 8)
const SEED = process.argv.includes('--seed')
const FSYNC_OFF = process.argv[process.argv.indexOf('--fsync') + 1] === 'off' && process.argv.includes('--fsync')
const GC_LOG = process.argv.includes('--gc-log')
const say = (s: string) => process.stderr.write(s)
const loadavg = () => readFileSync('/proc/loadavg', 'utf8').split(' ')[0]!
const cpuSeconds = (pid: number) => {
  try {
    const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')
    return (Number(f[11]) + Number(f[12])) / 100
  } catch {
    return Number.NaN
  }
}
/** CPU seconds of a process's main thread (the engine's event loop). */
const loopCpuSeconds = (pid: number) => {
  try {
    const f = readFileSync(`/proc/${pid}/task/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')
    return (Number(f[11]) + Number(f[12])) / 100
  } catch {
    return Number.NaN
  }
}
/** CPU seconds of the cluster: the postmaster and its children. */
const pgCpu = (dir: string) => {
  const pm = Number(readFileSync(join(dir, 'data', 'postmaster.pid'), 'utf8').split('\n')[0])
  const kids = new TextDecoder().decode(Bun.spawnSync(['pgrep', '-P', String(pm)]).stdout).split('\n').filter(Boolean).map(Number)
  return [pm, ...kids].map(cpuSeconds).filter((x) => !Number.isNaN(x)).reduce((a, b) => a + b, 0)
}

if (Bun.spawnSync(['sh', '-c', `[ -x ${ROOT}/dist/muster ] && [ -z "$(find ${ROOT}/src ${ROOT}/commands -newer ${ROOT}/dist/muster -print -quit)" ]`]).exitCode !== 0) {
  say('building dist/muster… ')
  if (Bun.spawnSync(['bun', 'run', 'build'], { cwd: ROOT, stdout: 'ignore' }).exitCode !== 0) throw new Error('build failed')
}

const work = mkdtempSync(join(tmpdir(), 'muster-bench-ha-'))
// Its own directory: as root the cluster runs as the postgres user, who cannot enter `work` (0700).
const pgDir = mkdtempSync(join(tmpdir(), 'muster-bench-pg-'))
chmodSync(pgDir, 0o755)
const pg = await startThrowawayPostgres(join(pgDir, 'pg'), ['max_connections=400', ...(FSYNC_OFF ? ['fsync=off', 'synchronous_commit=off', 'full_page_writes=off'] : [])])
const platforms: Serving[] = []
const dirs = Array.from({ length: P }, (_, i) => join(work, `platform-${String.fromCharCode(97 + i)}`))
const lagFiles = dirs.map((d) => `${d}.lag.json`)
/** The engine's environment for Platform i: its lag file (and the collector's log). */
const envFor = (i: number) => ({ MUSTER_LOOP_LAG_FILE: lagFiles[i]!, ...(GC_LOG ? { BUN_JSC_logGC: '1' } : {}) })
try {
  // The first Platform makes the store; the others start with a copy of its master key (README, several Platforms).
  let a = await startServe(dirs[0]!, ['--database', pg.url], envFor(0))
  const admin = await adminToken(dirs[0]!)
  const names = Array.from({ length: N }, (_, i) => `node-${i}`)
  let credentials: string[]
  say(`ha: ${SEED ? 'seeding' : 'enrolling'} ${N} nodes (load ${loadavg()})… `)
  const t0 = performance.now()
  if (SEED) {
    const ids = await identities(N, say)
    const token = await fleetToken(a.url, admin, N)
    await a.stop()
    credentials = await seedFleet(dirs[0]!, token, names, ids, Date.now(), pg.url)
    say(`${N} seeded in ${((performance.now() - t0) / 1000).toFixed(1)} s\n`)
    a = await startServe(dirs[0]!, ['--database', pg.url], envFor(0))
  } else {
    credentials = await enrollNodes({ url: a.url, admin, count: N, log: say })
    say(`ha: ${N} enrolls through one Platform on PostgreSQL at ${down(N / ((performance.now() - t0) / 1000), 0)}/s\n`)
  }
  platforms.push(a)
  for (const [i, dir] of dirs.entries()) {
    if (i === 0) continue
    mkdirSync(join(dir, 'platform'), { recursive: true, mode: 0o700 })
    copyFileSync(join(dirs[0]!, 'platform', 'master.key'), join(dir, 'platform', 'master.key'))
    platforms.push(await startServe(dir, ['--database', pg.url], envFor(i)))
  }
  const urls = platforms.map((p) => p.url)
  // The Agents' own choice (src/agent/platform-choice.ts firstChoice); a move goes to the next in this list.
  const known = urls.map((url) => ({ url }))
  const first = names.map((name) => urls.indexOf(firstChoice(name, known)!))
  say(`ha: ${P} Platforms on one PostgreSQL${FSYNC_OFF ? ' (fsync off)' : ''}: ${urls.join(' ')}; first choices ${urls.map((_, t) => first.filter((f) => f === t).length).join(' / ')}\n`)

  const victim = 0
  let killedAt = Number.NaN
  const cpuBefore = platforms.map((p) => cpuSeconds(p.pid))
  const loopBefore = platforms.map((p) => loopCpuSeconds(p.pid))
  let loopVictim = Number.NaN
  const pgBefore = pgCpu(join(pgDir, 'pg'))
  const loadBefore = loadavg()
  say(`ha: running ${N} nodes every ${INTERVAL_MS / 1000} s for ${SECONDS} s${KILL_AT > 0 ? `, kill -9 of ${urls[victim]} at ${KILL_AT} s` : ''} (load ${loadBefore})\n`)
  let cpuVictim = Number.NaN
  /** The killed Platform's nodes: when each was first answered by another Platform after the kill. */
  const answeredElsewhere = new Map<number, number>()
  /** Each Platform's highest RSS during the run (a killed one: until the kill). */
  const rssPeak = platforms.map(() => 0)
  let listings = ''
  /** What an operator waits for on a surviving Platform (from this process, which also runs the fleet: an upper bound). */
  const timeListings = async (on: number) => {
    const get = async (path: string) => {
      const t = performance.now()
      const r = await fetch(`${urls[on]}${path}`, { headers: { authorization: `Bearer ${admin}` } })
      const body = await r.text()
      return `${up(performance.now() - t, 1)} ms (${r.status}, ${body.length} bytes)`
    }
    const one = `node-${Math.floor(N / 2)}`
    listings = `on ${urls[on]}: nodes list first page ${await get('/api/v1/nodes')}, again ${await get('/api/v1/nodes')}, name look-up ${await get(`/api/v1/nodes?q=${one}&limit=1`)}`
  }
  let lagBefore: ReturnType<typeof readLag>[] = []
  let lagFrom = 0
  let stderrFrom: number[] = []
  // The credentials in one buffer for the run (a string each: a million cells for the load generator's collector).
  const packed = Packed.from(credentials)
  credentials = []
  const result = await runAgents({
    onStart: () => {
      lagBefore = lagFiles.map(readLag)
      lagFrom = Date.now() - 1000
      stderrFrom = platforms.map((p) => p.stderr().length)
    },
    targets: urls,
    credentials: packed,
    names,
    firstTarget: (i) => first[i]!,
    intervalMs: INTERVAL_MS,
    seconds: SECONDS,
    connectionsPerTarget: CONNECTIONS,
    sources: SOURCES,
    log: say,
    onAnswer: (node, target, atMs) => {
      if (!Number.isNaN(killedAt) && first[node] === victim && target !== victim && !answeredElsewhere.has(node)) answeredElsewhere.set(node, atMs)
    },
    onSecond: async (second) => {
      for (const [i, p] of platforms.entries()) if (!(i === victim && !Number.isNaN(killedAt))) rssPeak[i] = Math.max(rssPeak[i]!, rssMB(p.pid) || 0)
      if (second === Math.floor((SECONDS * 3) / 4)) void timeListings(P > 1 ? (victim + 1) % P : 0)
      if (KILL_AT > 0 && second === KILL_AT) {
        cpuVictim = cpuSeconds(platforms[victim]!.pid) - cpuBefore[victim]!
        loopVictim = loopCpuSeconds(platforms[victim]!.pid) - loopBefore[victim]!
        killedAt = performance.now()
        await platforms[victim]!.kill9()
        say(`ha: killed ${urls[victim]} (kill -9 of its engine, then serve) at ${second} s\n`)
      }
    },
  })
  const lagTo = Date.now()
  const lags: (LagSummary | null)[] = lagFiles.map((f, i) => {
    const after = readLag(f)
    return after ? summarize(lagBefore[i] ?? null, after, lagFrom, lagTo) : null
  })
  const cpu = platforms.map((p, i) => (i === victim && !Number.isNaN(cpuVictim) ? cpuVictim : cpuSeconds(p.pid) - cpuBefore[i]!))
  const loops = platforms.map((p, i) => (i === victim && !Number.isNaN(loopVictim) ? loopVictim : loopCpuSeconds(p.pid) - loopBefore[i]!))
  const pgUsed = pgCpu(join(pgDir, 'pg')) - pgBefore
  const { latencies, okBeats } = result
  say(`ha: expected ${result.expected} heartbeats, answered ${okBeats} with 200 (${result.perTarget.map((n, i) => `${urls[i]} ${n}`).join(', ')}); statuses ${JSON.stringify(result.statuses)}\n`)
  say(`ha: CPU ${cpu.map((c, i) => `${String.fromCharCode(97 + i)} ${up(c / SECONDS, 2)} (event loop ${up(loops[i]! / SECONDS, 2)})`).join(', ')} cores, PostgreSQL ${up(pgUsed / SECONDS, 2)} cores, load generator ${up(result.loadGeneratorCpuSeconds / SECONDS, 2)} cores; ${up(((cpu.reduce((x, y) => x + y, 0) + pgUsed) * 1e6) / Math.max(1, okBeats), 1)} us of Platform and PostgreSQL CPU a heartbeat; load ${loadBefore} before, ${loadavg()} after\n`)
  say(`ha: RSS during the run max ${rssPeak.map((r, i) => `${String.fromCharCode(97 + i)} ${up(r, 0)} MB`).join(', ')}; peak since start ${platforms.map((p, i) => (i === victim && !Number.isNaN(killedAt) ? `${String.fromCharCode(97 + i)} (killed)` : `${String.fromCharCode(97 + i)} ${up(peakRssMB(p.pid), 0)} MB`)).join(', ')}\n`)
  if (listings) say(`ha: during the run, ${listings}\n`)
  if (!Number.isNaN(killedAt)) {
    const killMs = killedAt - result.runStart
    const theirs = first.map((f, i) => (f === victim ? i : -1)).filter((i) => i >= 0)
    const moved = theirs.filter((i) => answeredElsewhere.has(i))
    const last = moved.reduce((m, i) => Math.max(m, answeredElsewhere.get(i)! - killMs), 0)
    say(`ha: the killed Platform's nodes: ${moved.length} of ${theirs.length} answered by another Platform after the kill, the last ${up(last / 1000, 1)} s after it; ${result.absorbed} heartbeats answered after a move (retries absorbed)\n`)
  }
  for (const [i, l] of lags.entries()) {
    const name = `ha: ${String.fromCharCode(97 + i)}${i === victim && KILL_AT > 0 ? ' (killed: until the kill)' : ''}`
    if (l) say(`${lagText(name, l)}\n`)
    if (GC_LOG) say(`${gcText(name, platforms[i]!.stderr().slice(stderrFrom[i] ?? 0), SECONDS)}\n`)
  }
  const worst = lags.filter((l): l is LagSummary => l !== null)
  const lagP99 = worst.length ? up(Math.max(...worst.map((l) => l.p99)), 2) : '?'
  const lagMax = worst.length ? up(Math.max(...worst.map((l) => l.max)), 1) : '?'
  console.log(`ha: platforms=${P} nodes=${N} heartbeats/s=${down(okBeats / SECONDS, 0)} p50=${up(percentile(latencies, 0.5), 2)} ms p99=${up(percentile(latencies, 0.99), 2)} ms errors=${result.errors} lag_p99=${lagP99} ms lag_max=${lagMax} ms rss=${up(Math.max(...rssPeak), 0)} MB`)
} finally {
  for (const p of platforms) await p.stop().catch(() => {})
  pg.stop()
  rmSync(pgDir, { recursive: true, force: true })
  rmSync(work, { recursive: true, force: true })
}
process.exit(0)
