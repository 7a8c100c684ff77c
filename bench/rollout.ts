// A rollout over N simulated Agents against the compiled Platform
// (docs/benchmarks.md "Rollouts"): two real builds are released (the one the
// nodes run, and the target), N nodes are seeded into the store, and each
// simulated node does what the Agent does — heartbeats every S seconds, says
// what it runs, and when its heartbeat answer says `update` fetches its
// directive, downloads the release (a delta against the binary it runs),
// reports installing and restarting, waits as the new Agent's health gate
// would, and reports done. Prints the Platform's bytes sent per node, the
// rollout's duration and the Platform's CPU.
//   bun run build && bun bench/rollout.ts --nodes 10000 --max-unavailable 5%
// Options: --interval S (heartbeat, default 10), --gate S (the health gate's
// wait, default 3), --change line|feature (what differs between the two
// builds: one line of muster's code, default; or everything between this
// tree and the commit in --from), --from COMMIT.
// Ends with: rollout: nodes=N duration=D s bytes/node=B platform-cpu=C s
import { createHash } from 'node:crypto'
import { existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createClient } from '../src/client/index.ts'
import { publishRelease } from '../src/releases/publish.ts'
import { newReleaseKey } from '../src/signed/releases.ts'
import { VERSION } from '../src/version.ts'
import { adminToken, fleetToken } from './enroll-nodes.ts'
import { identities } from './identities.ts'
import { ROOT, startServe } from './lib.ts'
import { seedFleet } from './seed-fleet.ts'

const arg = (name: string, dflt: string) => {
  const i = process.argv.indexOf(`--${name}`)
  return i > 0 ? process.argv[i + 1]! : dflt
}
const N = Number(arg('nodes', '1000'))
const MAX_UNAVAILABLE = arg('max-unavailable', '5%')
const INTERVAL_MS = Number(arg('interval', '10')) * 1000
const GATE_MS = Number(arg('gate', '3')) * 1000
const CHANGE = arg('change', 'line')
const FROM = arg('from', '4c14d1f4cec39cf23f5f3ab8f5f5df284aaee47b')
const say = (s: string) => process.stderr.write(s)
const cpuSeconds = (pid: number) => {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')
  return (Number(f[11]) + Number(f[12])) / 100
}
const sha = (file: string) => createHash('sha256').update(readFileSync(file)).digest('hex')

// ---- two real builds ---------------------------------------------------------------

const BIN = join(ROOT, 'dist', 'muster')
if (Bun.spawnSync(['sh', '-c', `[ -x ${BIN} ] && [ -z "$(find ${ROOT}/src ${ROOT}/commands -newer ${BIN} -print -quit)" ]`]).exitCode !== 0) {
  say('building dist/muster… ')
  if (Bun.spawnSync(['bun', 'run', 'build'], { cwd: ROOT, stdout: 'ignore' }).exitCode !== 0) throw new Error('build failed')
}

/** This tree (or `commit`) compiled, with `edit` applied to its sources first. */
async function buildTree(label: string, commit: string | null, edit: (dir: string) => void): Promise<string> {
  const work = mkdtempSync(join(tmpdir(), `muster-bench-build-${label}-`))
  const archive = commit ? Bun.spawn(['git', 'archive', commit], { cwd: ROOT, stdout: 'pipe' }) : Bun.spawn(['sh', '-c', 'git ls-files -z | xargs -0 tar -c'], { cwd: ROOT, stdout: 'pipe' })
  const untar = Bun.spawn(['tar', '-x', '-C', work], { stdin: archive.stdout })
  if ((await archive.exited) !== 0 || (await untar.exited) !== 0) throw new Error(`exporting ${commit ?? 'the tree'} failed`)
  symlinkSync(join(ROOT, 'node_modules'), join(work, 'node_modules'))
  edit(work)
  const b = Bun.spawn(['bun', 'run', 'build.ts'], { cwd: work, stdout: 'ignore', stderr: 'pipe' })
  if ((await b.exited) !== 0) throw new Error(`building ${label} failed: ${await new Response(b.stderr).text()}`)
  return join(work, 'dist', 'muster')
}

say(`rollout: making the two builds (${CHANGE === 'line' ? 'one line of code apart' : `${FROM.slice(0, 10)} and this tree`})… `)
const target = CHANGE === 'line' ? await buildTree('target', null, (dir) => {
  const f = join(dir, 'src', 'agent', 'update', 'updater.ts')
  const before = readFileSync(f, 'utf8')
  const after = before.replace('log.info(`update: fetching ${man.version} from ${label}`)', 'log.info(`update: downloading ${man.version} from ${label}`)')
  if (after === before) throw new Error('the line to change is not in updater.ts')
  writeFileSync(f, after)
}) : BIN
const base = CHANGE === 'line' ? BIN : await buildTree('base', FROM, () => {})
if (sha(base) === sha(target)) throw new Error('the two builds are the same binary')
say(`${readFileSync(base).byteLength} and ${readFileSync(target).byteLength} bytes\n`)

// ---- the Platform and the fleet --------------------------------------------------------

const dataDir = mkdtempSync(join(tmpdir(), 'muster-bench-rollout-'))
let platform = await startServe(dataDir)
const admin = await adminToken(dataDir)
const ids = await identities(N, say)
const names = Array.from({ length: N }, (_, i) => `node-${i}`)
const token = await fleetToken(platform.url, admin, N)
await platform.stop()
const credentials = await seedFleet(dataDir, token, names, ids)
platform = await startServe(dataDir)
const client = createClient({ url: platform.url, token: admin })
const key = newReleaseKey()
say('rollout: releasing both builds… ')
const baseRelease = await publishRelease(client, { binary: base, key, level: 3, version: VERSION })
const targetRelease = await publishRelease(client, { binary: target, key, level: 3, version: VERSION })
say(`sequences ${baseRelease.sequence} and ${targetRelease.sequence}; ${targetRelease.compressedSize} bytes compressed\n`)

// ---- the simulated Agents ---------------------------------------------------------------------

const stats = { heartbeats: 0, errors: 0, releaseBytes: [] as number[], directiveBytes: [] as number[], reportBytes: 0, deltas: 0, fulls: 0 }
const body = JSON.stringify({ version: VERSION, capacity: { cpuMillis: 2000, memoryMB: 4096 }, replicas: [] })
let stopping = false
const busy = new Set<number>()

async function call(i: number, method: string, path: string, b?: string): Promise<Response> {
  return fetch(`${platform.url}${path}`, { method, headers: { authorization: `Bearer ${credentials[i]}`, ...(b ? { 'content-type': 'application/json' } : {}) }, body: b })
}

async function report(i: number, r: Record<string, unknown>): Promise<void> {
  const res = await call(i, 'POST', '/api/v1/nodes/self/update', JSON.stringify(r))
  stats.reportBytes += (await res.text()).length
}

/** What the Agent does with its directive (src/agent/update/updater.ts), the install and restart simulated. */
async function update(i: number): Promise<void> {
  busy.add(i)
  try {
    const d = await call(i, 'GET', '/api/v1/nodes/self/directive')
    const text = await d.text()
    stats.directiveBytes.push(text.length)
    const directive = (JSON.parse(text) as { directive: { payload: { rollout: string; release: { manifest: { sha256: string; version: string; sequence: number } } } } | null }).directive
    if (!directive) return
    const m = directive.payload.release.manifest
    const base = { rollout: directive.payload.rollout, sha256: m.sha256, version: m.version }
    await report(i, { ...base, state: 'downloading' })
    const rel = await call(i, 'GET', `/api/v1/nodes/self/release/${m.sha256}?from=${baseRelease.sha256}`)
    const bytes = (await rel.arrayBuffer()).byteLength
    stats.releaseBytes.push(bytes)
    if (rel.headers.get('x-muster-encoding') === 'zstd-delta') stats.deltas++
    else stats.fulls++
    await report(i, { ...base, state: 'installing' })
    await report(i, { ...base, state: 'restarting' })
    await Bun.sleep(GATE_MS)
    await report(i, { ...base, state: 'done' })
    await call(i, 'POST', '/api/v1/nodes/self/agent', JSON.stringify({ arch: 'x64', version: m.version, binarySha256: m.sha256, sequence: m.sequence, skipped: [] }))
  } catch {
    stats.errors++
  } finally {
    busy.delete(i)
  }
}

async function node(i: number): Promise<void> {
  await Bun.sleep(Math.random() * INTERVAL_MS)
  await call(i, 'POST', '/api/v1/nodes/self/agent', JSON.stringify({ arch: 'x64', version: VERSION, binarySha256: baseRelease.sha256, sequence: baseRelease.sequence, skipped: [] })).then((r) => r.text())
  while (!stopping) {
    const at = performance.now()
    try {
      const r = await call(i, 'POST', '/api/v1/nodes/register', body)
      const a = (await r.json()) as { update?: true }
      stats.heartbeats++
      if (a.update && !busy.has(i)) void update(i)
    } catch {
      stats.errors++
    }
    await Bun.sleep(Math.max(0, INTERVAL_MS - (performance.now() - at)))
  }
}

say(`rollout: ${N} nodes heartbeating every ${INTERVAL_MS / 1000} s… `)
const loops = names.map((_, i) => node(i))
// Every node has said what it runs before the rollout starts.
for (;;) {
  const known = await fetch(`${platform.url}/api/v1/overview`, { headers: { authorization: `Bearer ${admin}` } }).then(() => true)
  if (known && stats.heartbeats >= N) break
  await Bun.sleep(500)
}
say('ready\n')

const cpuBefore = cpuSeconds(platform.pid)
const started = performance.now()
const r = await client.rollouts.start({ version: VERSION, maxUnavailable: MAX_UNAVAILABLE })
say(`rollout: ${r.id} started over ${r.nodes.length} nodes, at most ${r.maxUnavailableNodes} at a time\n`)
let last = ''
for (;;) {
  await Bun.sleep(3000)
  // What the dashboard asks for: counts, groups and the nodes worth a look (never the ten thousand).
  const s = await client.rollouts.status(r.id, { nodes: 'watch' })
  const line = `${s.state}: ${s.counts.done} done, ${s.counts.downloading + s.counts.installing + s.counts.restarting} in flight, ${s.counts.failed + s.counts['rolled-back']} failed`
  if (line !== last) say(`  ${((performance.now() - started) / 1000).toFixed(0)} s ${line}\n`)
  last = line
  if (s.state !== 'running') break
}
const duration = (performance.now() - started) / 1000
const cpu = cpuSeconds(platform.pid) - cpuBefore
const final = await client.rollouts.status(r.id)
stopping = true
await Promise.race([Promise.all(loops), Bun.sleep(INTERVAL_MS + 5000)])
await platform.stop()
rmSync(dataDir, { recursive: true, force: true })
for (const f of [base, target]) if (f !== BIN && existsSync(f)) rmSync(join(f, '..', '..'), { recursive: true, force: true })

const sorted = [...stats.releaseBytes].sort((a, b) => a - b)
const median = sorted[sorted.length >> 1] ?? 0
const directive = Math.max(0, ...stats.directiveBytes)
say(`rollout: ${final.state}${final.reason ? ` (${final.reason})` : ''}; ${final.counts.done} done, ${stats.deltas} deltas and ${stats.fulls} whole binaries sent, ${stats.errors} errors, ${stats.heartbeats} heartbeats\n`)
process.stdout.write(`rollout: nodes=${N} max-unavailable=${MAX_UNAVAILABLE} change=${CHANGE} duration=${duration.toFixed(1)} s bytes/node=${median + directive} (release ${median}, max ${sorted.at(-1) ?? 0}; directive ${directive}) platform-cpu=${cpu.toFixed(1)} s (${((cpu / duration) * 100).toFixed(0)}% of a core)\n`)
