// A fleet of N distinct enrolled nodes against a freshly started compiled
// Platform (SPEC §16.10). Each node has its own key, certificate, proof of key
// and credential (enrolled through the real enroll route), and sends exactly
// what the Agent sends: a heartbeat every S seconds (byte for byte the request
// Bun's fetch makes from src/agent/agent.ts), and a GET of its assignments
// when the heartbeat answer says their revision moved (src/agent/workloads.ts).
//   bun run build && bun bench/fleet.ts --nodes 100000 --interval 10 --seconds 60
// Options: --connections C (default min(N, 16000)), --sources K (127.0.0.2…, default 8),
// --deploy R (deploy a project of R replicas a third into the run: R nodes fetch),
// --seed (write the N enrollments into the store, as bench/seed-fleet.ts says, instead of
// enrolling them through the route: minutes saved on a busy machine; the run is the same).
// Ends with: fleet: nodes=N heartbeats/s=R p50=A ms p99=B ms errors=E rss=M MB
//
// Each node fires on a fixed schedule (a random phase, then every S seconds),
// and latency is measured from when the request was due, so a Platform that
// falls behind shows it in p99 rather than in a slower schedule. Nodes share
// persistent connections (one Agent holds one keep-alive connection; here the
// file limit of one process, 20,000 on this machine, caps the connections).
import { capacity } from '../src/agent/agent.ts'
import { VERSION } from '../src/version.ts'
import { adminToken, enrollNodes, fleetToken } from './enroll-nodes.ts'
import { seedFleet } from './seed-fleet.ts'
import { identities } from './identities.ts'
import { ROOT } from './lib.ts'
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

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

interface Running {
  url: string
  /** The serving engine (serve's child), whose CPU and memory are measured. */
  pid: number
  stop(): Promise<void>
}

async function startServe(dataDir: string): Promise<Running> {
  // As many files as this process may open (the hard limit): one per connection.
  const cmd = `ulimit -n "$(ulimit -Hn)"; exec "${BIN}" serve --data-dir "${dataDir}" --port 0 --remote-dispatch --no-local-node --enroll-rate 1000000 --enroll-burst 1000000 --enroll-in-flight 100000`
  const p = Bun.spawn(['sh', '-c', cmd], { stdin: 'ignore', stdout: 'pipe', stderr: 'pipe', env: { ...process.env, MUSTER_LOG_LEVEL: '3' } })
  let out = ''
  void (async () => {
    for await (const c of p.stderr) out += new TextDecoder().decode(c)
  })()
  const deadline = Date.now() + 120_000
  while (!/listening on (http:\/\/\S+)/.test(out)) {
    if (p.exitCode !== null || Date.now() > deadline) throw new Error(`serve did not start:\n${out}`)
    await Bun.sleep(50)
  }
  // serve supervises an engine child that does the serving (README, engine swap): measure the engine.
  const engine = Number(new TextDecoder().decode(Bun.spawnSync(['pgrep', '-n', '-P', String(p.pid)]).stdout).trim())
  return {
    url: out.match(/listening on (http:\/\/\S+)/)![1]!,
    pid: engine > 0 ? engine : p.pid,
    async stop() {
      if (p.exitCode !== null) return
      p.kill('SIGTERM')
      await p.exited
    },
  }
}

const status = (pid: number, field: string) => Number(readFileSync(`/proc/${pid}/status`, 'utf8').match(new RegExp(`${field}:\\s+(\\d+)`))?.[1] ?? Number.NaN) / 1024
/** user+system CPU seconds of a process. */
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
let platform: Running
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
platform = await startServe(dataDir)
const url = new URL(platform.url)
say(`fleet: Platform restarted with ${N} nodes; RSS ${status(platform.pid, 'VmRSS').toFixed(0)} MB\n`)

// ---- the simulated Agents -------------------------------------------------------------

const HOST = `${url.hostname}:${url.port}`
const BODY = JSON.stringify({ version: VERSION, capacity: capacity(), replicas: [] })
const heartbeat = (credential: string) =>
  `POST /api/v1/nodes/register HTTP/1.1\r\nAccept: application/json\r\nAuthorization: Bearer ${credential}\r\nContent-Type: application/json\r\nConnection: keep-alive\r\nUser-Agent: Bun/${Bun.version}\r\nHost: ${HOST}\r\nAccept-Encoding: gzip, deflate, br, zstd\r\nContent-Length: ${Buffer.byteLength(BODY)}\r\n\r\n${BODY}`
const assignments = (credential: string) =>
  `GET /api/v1/nodes/self/assignments HTTP/1.1\r\nAccept: application/json\r\nAuthorization: Bearer ${credential}\r\nConnection: keep-alive\r\nUser-Agent: Bun/${Bun.version}\r\nHost: ${HOST}\r\nAccept-Encoding: gzip, deflate, br, zstd\r\n\r\n`

const HEARTBEAT = 0
const ASSIGNMENTS = 1
interface Pending {
  node: number
  kind: number
  due: number
  /** When it was written to the socket (due, plus the wait for the connection and the schedule). */
  sent: number
}
interface Conn {
  socket: Bun.Socket<Conn> | null
  queue: Pending[]
  inFlight: Pending | null
  buf: Buffer | null
  /** What the socket did not take yet (written on drain). */
  out: Buffer | null
}

// What each simulated Agent knows: its applied assignment revision (-1: nothing applied yet).
const applied = new Int32Array(N).fill(-1)
const announced = new Int32Array(N)
const fetchingAssignments = new Uint8Array(N)
let runStart = 0
let runEnd = Number.POSITIVE_INFINITY
const latencies: number[] = []
const assignLatencies: number[] = []
const serverLatencies: number[] = []
let errors = 0
let okBeats = 0
let assignmentFetches = 0
const statuses = new Map<number, number>()

function send(c: Conn): void {
  if (c.inFlight || !c.socket) return
  const next = c.queue.shift()
  if (!next) return
  c.inFlight = next
  next.sent = performance.now()
  write(c, Buffer.from(next.kind === HEARTBEAT ? heartbeat(credentials[next.node]!) : assignments(credentials[next.node]!)))
}

function write(c: Conn, data: Buffer): void {
  const n = c.socket!.write(data)
  c.out = n >= data.length ? null : data.subarray(Math.max(0, n))
}

function completed(c: Conn, statusCode: number, body: string): void {
  const p = c.inFlight!
  c.inFlight = null
  const now = performance.now()
  const counted = p.due >= runStart && p.due < runEnd
  statuses.set(statusCode, (statuses.get(statusCode) ?? 0) + 1)
  if (statusCode !== 200) {
    if (counted) errors++
  } else if (p.kind === HEARTBEAT) {
    if (counted) {
      okBeats++
      latencies.push(now - p.due)
      serverLatencies.push(now - p.sent)
    }
    // The Agent: fetch when the announced revision moved past what it applied (0 on a fresh node: nothing to fetch).
    const m = body.match(/"assignmentRevision":(\d+)/)
    const r = m ? Number(m[1]) : -1
    if (r >= 0) {
      announced[p.node] = Math.max(announced[p.node]!, r)
      if (applied[p.node] === -1 && r === 0) applied[p.node] = 0
      else if (r > applied[p.node]! && !fetchingAssignments[p.node]) {
        fetchingAssignments[p.node] = 1
        c.queue.unshift({ node: p.node, kind: ASSIGNMENTS, due: now, sent: 0 })
      }
    }
  } else {
    fetchingAssignments[p.node] = 0
    assignmentFetches++
    assignLatencies.push(now - p.due)
    const m = body.match(/"revision":(\d+)/)
    if (m) applied[p.node] = Math.max(applied[p.node]!, Number(m[1]))
  }
  send(c)
}

function onData(c: Conn, data: Buffer): void {
  // The runtime may reuse `data` after this call: whatever is kept is a copy.
  let buf: Buffer = c.buf ? Buffer.concat([c.buf, data]) : data
  c.buf = null
  for (;;) {
    const headEnd: number = buf.indexOf('\r\n\r\n')
    const head = headEnd < 0 ? '' : buf.toString('latin1', 0, headEnd)
    const end: number = headEnd < 0 ? Number.POSITIVE_INFINITY : headEnd + 4 + Number(/\r\ncontent-length: *(\d+)/i.exec(head)?.[1] ?? 0)
    if (buf.length < end) {
      if (buf.length > 0) c.buf = Buffer.from(buf)
      return
    }
    const body = buf.toString('utf8', headEnd + 4, end)
    buf = buf.subarray(end)
    completed(c, Number(head.slice(9, 12)), body)
  }
}

function lost(c: Conn): void {
  if (c.socket === null) return // already handled (error, then close)
  // Everything this connection owed is an error; the node's next heartbeat goes on a new one.
  const owed = (c.inFlight ? 1 : 0) + c.queue.filter((p) => p.due >= runStart && p.due < runEnd).length
  errors += owed
  for (const p of [c.inFlight, ...c.queue]) if (p?.kind === ASSIGNMENTS) fetchingAssignments[p.node] = 0
  c.inFlight = null
  c.queue = []
  c.socket = null
  c.buf = null
  c.out = null
  if (!stopping) void open(c, conns.indexOf(c))
}

let stopping = false
async function open(c: Conn, i: number): Promise<void> {
  try {
    await Bun.connect<Conn>({
      hostname: url.hostname,
      port: Number(url.port),
      localAddress: `127.0.0.${2 + (i % SOURCES)}`,
      data: c,
      socket: {
        open: (s: Bun.Socket<Conn>) => {
          c.socket = s
          send(c)
        },
        data: (_s: Bun.Socket<Conn>, d: Buffer) => onData(c, d),
        drain: () => {
          if (c.out && c.socket) write(c, c.out)
        },
        close: () => lost(c),
        error: () => lost(c),
        connectError: () => {
          errors++
        },
      },
    } as unknown as Parameters<typeof Bun.connect<Conn>>[0])
  } catch {
    errors++
  }
}

const conns: Conn[] = Array.from({ length: CONNECTIONS }, () => ({ socket: null, queue: [], inFlight: null, buf: null, out: null }))
say(`fleet: opening ${CONNECTIONS} connections from ${SOURCES} source addresses… `)
for (let i = 0; i < CONNECTIONS; i += 500) await Promise.all(conns.slice(i, i + 500).map((c, j) => open(c, i + j)))
await Bun.sleep(500)
say(`${conns.filter((c) => c.socket).length} open\n`)
errors = 0

// Each node's phase in the interval, then every INTERVAL_MS: walk the nodes in phase order.
const phase = Float64Array.from({ length: N }, () => Math.random() * INTERVAL_MS)
const order = Uint32Array.from({ length: N }, (_, i) => i).sort((a, b) => phase[a]! - phase[b]!)
const loadBefore = loadavg()
const cpuBefore = cpuSeconds(platform.pid)
const selfBefore = process.cpuUsage()
say(`fleet: running ${N} nodes every ${INTERVAL_MS / 1000} s for ${SECONDS} s (load ${loadBefore})\n`)
runStart = performance.now()
runEnd = runStart + SECONDS * 1000
let next = 0
let cycle = 0
const rss: number[] = []
const rssTimer = setInterval(() => rss.push(status(platform.pid, 'VmRSS')), 1000)
let deployed: number | null = null
await new Promise<void>((resolve) => {
  const tick = setInterval(() => {
    const now = performance.now()
    if (DEPLOY > 0 && deployed === null && now - runStart > (SECONDS * 1000) / 3) {
      deployed = now
      void fetch(`${platform.url}/api/v1/projects`, {
        method: 'POST',
        headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'fleet', command: ['sleep', '3600'], replicas: DEPLOY, cpu: 10, memory: 16 }),
      }).then(async (r) => say(`fleet: deployed ${DEPLOY} replicas: ${r.status} ${r.ok ? '' : await r.text()}\n`))
    }
    for (;;) {
      const node = order[next]!
      const due = runStart + cycle * INTERVAL_MS + phase[node]!
      if (due > now || due >= runEnd) break
      const c = conns[node % CONNECTIONS]!
      c.queue.push({ node, kind: HEARTBEAT, due, sent: 0 })
      send(c)
      if (++next === N) {
        next = 0
        cycle++
      }
    }
    if (now >= runEnd) {
      clearInterval(tick)
      resolve()
    }
  }, 1)
})
// What is still unanswered 5 s after the end counts as an error.
const drainUntil = performance.now() + 5000
while (conns.some((c) => c.inFlight && c.inFlight.due < runEnd) && performance.now() < drainUntil) await Bun.sleep(50)
stopping = true
for (const c of conns) {
  if (c.inFlight && c.inFlight.due < runEnd) errors++
  errors += c.queue.filter((p) => p.due < runEnd && p.kind === HEARTBEAT).length
}
clearInterval(rssTimer)
const finalErrors = errors
const platformCpu = cpuSeconds(platform.pid) - cpuBefore
const self = process.cpuUsage(selfBefore)
const peak = status(platform.pid, 'VmHWM')
for (const c of conns) c.socket?.end()
await platform.stop()
if (!KEEP) rmSync(dataDir, { recursive: true, force: true })

latencies.sort((a, b) => a - b)
assignLatencies.sort((a, b) => a - b)
serverLatencies.sort((a, b) => a - b)
const pct = (xs: number[], q: number) => xs[Math.min(xs.length - 1, Math.floor(q * xs.length))] ?? Number.NaN
// Never rounded in the flattering direction: rates down, latencies and memory up.
const down = (x: number, d: number) => (Math.floor(x * 10 ** d) / 10 ** d).toFixed(d)
const up = (x: number, d: number) => (Math.ceil(x * 10 ** d) / 10 ** d).toFixed(d)
say(`fleet: expected ${((N * SECONDS * 1000) / INTERVAL_MS).toFixed(0)} heartbeats, answered ${okBeats} with 200; statuses ${JSON.stringify(Object.fromEntries(statuses))}\n`)
say(`fleet: Platform CPU ${up(platformCpu / SECONDS, 2)} cores, load generator ${up((self.user + self.system) / 1e6 / SECONDS, 2)} cores; RSS during the run max ${up(Math.max(...rss), 0)} MB, peak since start ${up(peak, 0)} MB; load ${loadBefore} before, ${loadavg()} after\n`)
say(`fleet: from the write to the answer (the wait for the schedule and the connection left out): p50 ${up(pct(serverLatencies, 0.5), 2)} ms p99 ${up(pct(serverLatencies, 0.99), 2)} ms\n`)
if (assignmentFetches > 0) say(`fleet: ${assignmentFetches} assignment fetches, p50 ${up(pct(assignLatencies, 0.5), 1)} ms p99 ${up(pct(assignLatencies, 0.99), 1)} ms\n`)
console.log(`fleet: nodes=${N} heartbeats/s=${down(okBeats / SECONDS, 0)} p50=${up(pct(latencies, 0.5), 2)} ms p99=${up(pct(latencies, 0.99), 2)} ms errors=${finalErrors} rss=${up(peak, 0)} MB`)
process.exit(0)
