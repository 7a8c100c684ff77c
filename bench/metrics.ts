// The cost of GET /metrics on a Platform holding N registered nodes: the
// compiled Platform (dist/muster serve) on a data directory seeded with N
// nodes (a quarter each ready, unreachable, enrolled, revoked; as
// test/helpers/seed-nodes.ts writes them), scraped with a metrics token.
//   bun run build && bun bench/metrics.ts --nodes 1000000 [--scrapes 20] [--every 1000]
// Prints, per run: the latency of each scrape (p50, p99, max), the answer's size and series count
// (constant whatever N), the engine's CPU per scrape (measured over the scrape window, the full
// counts the scrapes start included, less the same window idle).
import { readFileSync } from 'node:fs'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { openStore } from '../src/store/db.ts'
import { seedNodes, type SeedKind } from '../test/helpers/seed-nodes.ts'

const ROOT = resolve(import.meta.dir, '..')
const arg = (name: string, fallback: number) => {
  const i = process.argv.indexOf(`--${name}`)
  return i > 0 ? Number(process.argv[i + 1]) : fallback
}
const N = arg('nodes', 100_000)
const SCRAPES = arg('scrapes', 20)
const EVERY = arg('every', 1000)
const KINDS: SeedKind[] = ['ready', 'unreachable', 'enrolled', 'revoked']
const say = (s: string) => process.stderr.write(s)
const cpuSeconds = (pid: number) => {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')
  return (Number(f[11]) + Number(f[12])) / 100
}

const dir = mkdtempSync(join(tmpdir(), 'muster-bench-metrics-'))
const bin = join(ROOT, 'dist/muster')
const env = { ...process.env, MUSTER_LOG_LEVEL: '3', NO_COLOR: '1' }

async function serve(): Promise<{ proc: Bun.Subprocess; url: string; engine: number }> {
  const proc = Bun.spawn([bin, 'serve', '--data-dir', dir, '--port', '0', '--remote-dispatch', '--no-local-node'], { env, stdout: 'ignore', stderr: 'pipe' })
  let log = ''
  const dec = new TextDecoder()
  for await (const chunk of proc.stderr as ReadableStream<Uint8Array>) {
    log += dec.decode(chunk)
    const m = /listening on (http:\/\/\S+)/.exec(log)
    if (m) {
      const children = readFileSync(`/proc/${proc.pid}/task/${proc.pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean)
      return { proc, url: m[1]!, engine: Number(children.at(-1) ?? proc.pid) }
    }
  }
  throw new Error(`serve did not start:\n${log}`)
}

const stop = async (p: Bun.Subprocess) => {
  p.kill('SIGTERM')
  await p.exited
}

try {
  // 1. the store, then N nodes written into it while the Platform is stopped
  await stop((await serve()).proc)
  say(`metrics bench: seeding ${N} nodes… `)
  const t0 = performance.now()
  const store = await openStore(join(dir, 'muster.db'))
  // Seen "now" plus ten minutes: a million rows take longer to write and load than the 45 s a node stays ready.
  await seedNodes(store, Array.from({ length: N }, (_, i) => `node-${String(i).padStart(7, '0')}`), (i) => KINDS[i % 4]!, Date.now() + 10 * 60_000)
  await store.close()
  say(`${((performance.now() - t0) / 1000).toFixed(1)} s\n`)
  // 2. the Platform loads them; a metrics token
  const t1 = performance.now()
  const { proc, url, engine } = await serve()
  say(`metrics bench: Platform up with ${N} nodes in ${((performance.now() - t1) / 1000).toFixed(1)} s\n`)
  const minted = Bun.spawnSync([bin, 'admin', 'api-token', '--data-dir', dir, '--role', 'metrics', '--json'], { env })
  const { token } = JSON.parse(minted.stdout.toString()) as { token: string }
  const scrape = async () => {
    const t = performance.now()
    const r = await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${token}` } })
    const body = await r.text()
    if (r.status !== 200) throw new Error(`scrape answered ${r.status}`)
    return { ms: performance.now() - t, body }
  }
  const first = await scrape()
  const ready = /^muster_nodes\{state="ready"\} (\d+)$/m.exec(first.body)?.[1]
  if (Number(ready) !== N / 4) throw new Error(`muster_nodes{state="ready"} is ${ready}, expected ${N / 4}`)
  await Bun.sleep(2000)
  // 3. idle CPU, then the scrapes (every EVERY ms), then the CPU of one full count on its own
  const idle0 = cpuSeconds(engine)
  await Bun.sleep(SCRAPES * EVERY)
  const idle = cpuSeconds(engine) - idle0
  const cpu0 = cpuSeconds(engine)
  const times: number[] = []
  let bytes = 0
  let series = 0
  for (let i = 0; i < SCRAPES; i++) {
    const s = await scrape()
    times.push(s.ms)
    bytes = s.body.length
    series = s.body.split('\n').filter((l) => l && !l.startsWith('#')).length
    await Bun.sleep(Math.max(0, EVERY - s.ms))
  }
  const busy = cpuSeconds(engine) - cpu0
  times.sort((a, b) => a - b)
  const q = (p: number) => times[Math.min(times.length - 1, Math.floor(p * times.length))]!.toFixed(2)
  const perScrape = ((busy - idle) / SCRAPES) * 1000
  console.log(`metrics: nodes=${N} scrapes=${SCRAPES} every=${EVERY}ms p50=${q(0.5)} ms p99=${q(0.99)} ms max=${times.at(-1)!.toFixed(2)} ms bytes=${bytes} series=${series} engine_cpu_per_scrape=${perScrape.toFixed(1)} ms (window ${busy.toFixed(2)} s, idle ${idle.toFixed(2)} s)`)
  await stop(proc)
} finally {
  rmSync(dir, { recursive: true, force: true })
}
