// Simulated Agents for the fleet benches (bench/fleet.ts, bench/ha.ts): N
// distinct nodes, each with its own credential, sending exactly what the Agent
// sends (a heartbeat every S seconds, byte for byte the request Bun's fetch
// makes from src/agent/agent.ts, and a GET of its assignments when the answer
// says their revision moved: src/agent/workloads.ts) to the Platform it uses.
//
// Each node fires on a fixed schedule (a random phase, then every S seconds),
// and latency is measured from when the request was due, so a Platform that
// falls behind shows it in p99 rather than in a slower schedule. Nodes share
// persistent connections (one Agent holds one keep-alive connection; here the
// file limit of one process, 20,000 on this machine, caps the connections).
//
// Several Platforms (bench/ha.ts): each node starts on the Platform its own
// Agent would choose (firstChoice, src/agent/platform-choice.ts: a hash of its name),
// and, as the Agent does, moves to the next Platform of the list when its
// Platform fails (the connection is refused or lost, or a 5xx answers), and
// sends the same heartbeat there at once. A heartbeat is an error only when no
// Platform answered it (a retry the move absorbed is counted apart).
import { capacity } from '../src/agent/agent.ts'
import { VERSION } from '../src/version.ts'

export interface AgentsOptions {
  /** The Platforms' API URLs (the order is the Agents' list order: a move goes to the next). */
  targets: string[]
  credentials: Packed
  /** Node names, for the first choice of Platform (one Platform: unused). */
  names: string[]
  /** Index into targets of each node's first Platform. */
  firstTarget: (node: number) => number
  intervalMs: number
  seconds: number
  /** Connections to each Platform. */
  connectionsPerTarget: number
  /** Loopback source addresses 127.0.0.2… (a connection's four-tuple must be unique). */
  sources: number
  log: (s: string) => void
  /** Called for each heartbeat a Platform answered with 200 (ms since the run started). */
  onAnswer?: (node: number, target: number, atMs: number) => void
  /** Called once a second during the run with the seconds since it started. */
  onSecond?: (second: number) => void | Promise<void>
  /** Called when the run starts (the connections are open). */
  onStart?: () => void
}

export interface AgentsResult {
  expected: number
  okBeats: number
  errors: number
  /** Heartbeats a move to another Platform answered after theirs failed. */
  absorbed: number
  statuses: Record<string, number>
  latencies: number[]
  serverLatencies: number[]
  assignLatencies: number[]
  assignmentFetches: number
  /** Per Platform: the heartbeats it answered. */
  perTarget: number[]
  /** For each node that had to move: when (ms since the run started) it was first answered elsewhere. */
  moved: Map<number, number>
  runStart: number
  loadGeneratorCpuSeconds: number
}

const HEARTBEAT = 0
const ASSIGNMENTS = 1

interface Pending {
  node: number
  kind: number
  due: number
  /** When it was written to the socket (due, plus the wait for the connection and the schedule). */
  sent: number
  /** Platforms that failed it so far. */
  tries: number
}

interface Conn {
  target: number
  index: number
  socket: Bun.Socket<Conn> | null
  opening: boolean
  queue: Pending[]
  inFlight: Pending | null
  buf: Buffer | null
  /** What the socket did not take yet (written on drain). */
  out: Buffer | null
}

export async function runAgents(o: AgentsOptions): Promise<AgentsResult> {
  const N = o.credentials.length
  const T = o.targets.length
  const urls = o.targets.map((u) => new URL(u))
  const BODY = JSON.stringify({ version: VERSION, capacity: capacity(), replicas: [] })
  // Each request is its text before the credential, the credential's bytes, and the text after it.
  const HEARTBEAT_AFTER = urls.map((u) => Buffer.from(`\r\nContent-Type: application/json\r\nConnection: keep-alive\r\nUser-Agent: Bun/${Bun.version}\r\nHost: ${u.host}\r\nAccept-Encoding: gzip, deflate, br, zstd\r\nContent-Length: ${Buffer.byteLength(BODY)}\r\n\r\n${BODY}`))
  const HEARTBEAT_BEFORE = Buffer.from('POST /api/v1/nodes/register HTTP/1.1\r\nAccept: application/json\r\nAuthorization: Bearer ')
  const ASSIGNMENTS_AFTER = urls.map((u) => Buffer.from(`\r\nConnection: keep-alive\r\nUser-Agent: Bun/${Bun.version}\r\nHost: ${u.host}\r\nAccept-Encoding: gzip, deflate, br, zstd\r\n\r\n`))
  const ASSIGNMENTS_BEFORE = Buffer.from('GET /api/v1/nodes/self/assignments HTTP/1.1\r\nAccept: application/json\r\nAuthorization: Bearer ')
  const request = (before: Buffer, node: number, after: Buffer): Buffer => {
    const out = Buffer.allocUnsafe(before.length + o.credentials.byteLength(node) + after.length)
    before.copy(out, 0)
    const at = o.credentials.copyTo(node, out, before.length)
    after.copy(out, before.length + at)
    return out
  }

  // What each simulated Agent knows: its Platform and its applied assignment revision (-1: nothing applied yet).
  const current = Uint8Array.from({ length: N }, (_, i) => o.firstTarget(i))
  const applied = new Int32Array(N).fill(-1)
  const announced = new Int32Array(N)
  const fetchingAssignments = new Uint8Array(N)
  /** A Platform whose connections were refused: nodes move off it at once (the Agent's connect fails fast). */
  const down = new Uint8Array(T)
  let runStart = 0
  let runEnd = Number.POSITIVE_INFINITY
  const r: AgentsResult = {
    expected: 0,
    okBeats: 0,
    errors: 0,
    absorbed: 0,
    statuses: {},
    latencies: [],
    serverLatencies: [],
    assignLatencies: [],
    assignmentFetches: 0,
    perTarget: new Array(T).fill(0),
    moved: new Map(),
    runStart: 0,
    loadGeneratorCpuSeconds: 0,
  }
  const counted = (p: Pending) => p.due >= runStart && p.due < runEnd
  let stopping = false
  /** The run's errors are counted: what the closing connections still owed is not counted again. */
  let tallied = false

  const conns: Conn[][] = urls.map((_, t) =>
    Array.from({ length: o.connectionsPerTarget }, (_, index) => ({ target: t, index, socket: null, opening: false, queue: [], inFlight: null, buf: null, out: null })),
  )
  const connFor = (node: number) => conns[current[node]!]![node % o.connectionsPerTarget]!

  /** The node's Platform failed this request: the Agent moves to the next Platform and sends it again there. */
  function failOver(p: Pending, from: number): void {
    if (tallied) return // the end of the run counted it already
    p.tries++
    if (p.tries >= T || stopping) {
      if (counted(p) && p.kind === HEARTBEAT) r.errors++
      if (p.kind === ASSIGNMENTS) fetchingAssignments[p.node] = 0
      return
    }
    if (current[p.node] === from) current[p.node] = (from + 1) % T
    enqueue(p)
  }

  function enqueue(p: Pending): void {
    const t = current[p.node]!
    if (down[t]) return failOver(p, t)
    const c = connFor(p.node)
    c.queue.push(p)
    if (!c.socket && !c.opening) void open(c)
    send(c)
  }

  function send(c: Conn): void {
    if (c.inFlight || !c.socket) return
    const next = c.queue.shift()
    if (!next) return
    c.inFlight = next
    next.sent = performance.now()
    write(c, next.kind === HEARTBEAT ? request(HEARTBEAT_BEFORE, next.node, HEARTBEAT_AFTER[c.target]!) : request(ASSIGNMENTS_BEFORE, next.node, ASSIGNMENTS_AFTER[c.target]!))
  }

  function write(c: Conn, data: Buffer): void {
    const n = c.socket!.write(data)
    c.out = n >= data.length ? null : data.subarray(Math.max(0, n))
  }

  function completed(c: Conn, statusCode: number, body: string): void {
    const p = c.inFlight!
    c.inFlight = null
    const now = performance.now()
    if (statusCode >= 500) {
      failOver(p, c.target)
      return send(c)
    }
    r.statuses[statusCode] = (r.statuses[statusCode] ?? 0) + 1
    if (statusCode !== 200) {
      if (counted(p) && p.kind === HEARTBEAT) r.errors++
      if (p.kind === ASSIGNMENTS) fetchingAssignments[p.node] = 0
    } else if (p.kind === HEARTBEAT) {
      if (p.tries > 0 && !r.moved.has(p.node)) r.moved.set(p.node, now - runStart)
      o.onAnswer?.(p.node, c.target, now - runStart)
      if (counted(p)) {
        r.okBeats++
        r.perTarget[c.target]!++
        if (p.tries > 0) r.absorbed++
        r.latencies.push(now - p.due)
        r.serverLatencies.push(now - p.sent)
      }
      // The Agent: fetch when the announced revision moved past what it applied (0 on a fresh node: nothing to fetch).
      const m = body.match(/"assignmentRevision":(\d+)/)
      const rev = m ? Number(m[1]) : -1
      if (rev >= 0) {
        announced[p.node] = Math.max(announced[p.node]!, rev)
        if (applied[p.node] === -1 && rev === 0) applied[p.node] = 0
        else if (rev > applied[p.node]! && !fetchingAssignments[p.node]) {
          fetchingAssignments[p.node] = 1
          c.queue.unshift({ node: p.node, kind: ASSIGNMENTS, due: now, sent: 0, tries: 0 })
        }
      }
    } else {
      fetchingAssignments[p.node] = 0
      r.assignmentFetches++
      r.assignLatencies.push(now - p.due)
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

  /** The connection closed or failed: what it owed goes to the next Platform (or, with one Platform, is an error). */
  function lost(c: Conn): void {
    if (c.socket === null) return // already handled (error, then close)
    const owed = [c.inFlight, ...c.queue].filter((p): p is Pending => p !== null)
    c.inFlight = null
    c.queue = []
    c.socket = null
    c.buf = null
    c.out = null
    for (const p of owed) failOver(p, c.target)
    if (!stopping) void open(c)
  }

  async function open(c: Conn): Promise<void> {
    if (c.opening || stopping) return
    c.opening = true
    const u = urls[c.target]!
    try {
      await Bun.connect<Conn>({
        hostname: u.hostname,
        port: Number(u.port),
        localAddress: `127.0.0.${2 + (c.index % o.sources)}`,
        data: c,
        socket: {
          open: (s: Bun.Socket<Conn>) => {
            c.opening = false
            c.socket = s
            down[c.target] = 0
            send(c)
          },
          data: (_s: Bun.Socket<Conn>, d: Buffer) => onData(c, d),
          drain: () => {
            if (c.out && c.socket) write(c, c.out)
          },
          close: () => lost(c),
          error: () => lost(c),
          connectError: () => refused(c),
        },
      } as unknown as Parameters<typeof Bun.connect<Conn>>[0])
    } catch {
      refused(c)
    }
  }

  /** A connect was refused: the Platform is down; what waited moves on, and the connection is tried again in a second. */
  function refused(c: Conn): void {
    c.opening = false
    down[c.target] = 1
    const owed = c.queue
    c.queue = []
    for (const p of owed) failOver(p, c.target)
    if (!stopping) setTimeout(() => void open(c), 1000)
  }

  o.log(`agents: opening ${o.connectionsPerTarget} connections to each of ${T} Platform(s) from ${o.sources} source addresses… `)
  for (const list of conns) for (let i = 0; i < list.length; i += 500) await Promise.all(list.slice(i, i + 500).map((c) => open(c)))
  await Bun.sleep(500)
  o.log(`${conns.flat().filter((c) => c.socket).length} open\n`)

  // Each node's phase in the interval, then every intervalMs: walk the nodes in phase order.
  const phase = Float64Array.from({ length: N }, () => Math.random() * o.intervalMs)
  const order = Uint32Array.from({ length: N }, (_, i) => i).sort((a, b) => phase[a]! - phase[b]!)
  const selfBefore = process.cpuUsage()
  o.onStart?.()
  runStart = performance.now()
  r.runStart = runStart
  runEnd = runStart + o.seconds * 1000
  let next = 0
  let cycle = 0
  let second = 0
  await new Promise<void>((resolve) => {
    const tick = setInterval(() => {
      const now = performance.now()
      while (second < Math.floor((now - runStart) / 1000)) void o.onSecond?.(++second)
      for (;;) {
        const node = order[next]!
        const due = runStart + cycle * o.intervalMs + phase[node]!
        if (due > now || due >= runEnd) break
        r.expected++
        enqueue({ node, kind: HEARTBEAT, due, sent: 0, tries: 0 })
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
  const all = () => conns.flat()
  const drainUntil = performance.now() + 5000
  while (all().some((c) => (c.inFlight && counted(c.inFlight)) || c.queue.some(counted)) && performance.now() < drainUntil) await Bun.sleep(50)
  stopping = true
  for (const c of all()) {
    if (c.inFlight && counted(c.inFlight) && c.inFlight.kind === HEARTBEAT) r.errors++
    r.errors += c.queue.filter((p) => counted(p) && p.kind === HEARTBEAT).length
  }
  tallied = true
  const self = process.cpuUsage(selfBefore)
  r.loadGeneratorCpuSeconds = (self.user + self.system) / 1e6
  for (const c of all()) c.socket?.end()
  r.latencies.sort((a, b) => a - b)
  r.serverLatencies.sort((a, b) => a - b)
  r.assignLatencies.sort((a, b) => a - b)
  return r
}

/**
 * Many short ASCII strings in one buffer: a million credentials as strings are a million cells the load
 * generator's collector walks on every full collection (~85 ms each, a pause in the schedule that comes back
 * to the Platform as a burst of overdue heartbeats).
 */
export class Packed {
  private constructor(
    private readonly bytes: Buffer,
    private readonly ends: Uint32Array,
  ) {}

  static from(xs: readonly string[]): Packed {
    const ends = new Uint32Array(xs.length)
    let total = 0
    for (let i = 0; i < xs.length; i++) ends[i] = total += xs[i]!.length
    const bytes = Buffer.allocUnsafe(total)
    for (let i = 0; i < xs.length; i++) bytes.write(xs[i]!, ends[i]! - xs[i]!.length, 'latin1')
    return new Packed(bytes, ends)
  }

  get length(): number {
    return this.ends.length
  }

  private start(i: number): number {
    return i === 0 ? 0 : this.ends[i - 1]!
  }

  at(i: number): string {
    return this.bytes.toString('latin1', this.start(i), this.ends[i])
  }

  byteLength(i: number): number {
    return this.ends[i]! - this.start(i)
  }

  /** Copies string i into `target` at `at`; the bytes copied. */
  copyTo(i: number, target: Buffer, at: number): number {
    return this.bytes.copy(target, at, this.start(i), this.ends[i])
  }
}

export const percentile = (xs: number[], q: number) => xs[Math.min(xs.length - 1, Math.floor(q * xs.length))] ?? Number.NaN
// Never rounded in the flattering direction: rates down, latencies and memory up.
export const down = (x: number, d: number) => (Math.floor(x * 10 ** d) / 10 ** d).toFixed(d)
export const up = (x: number, d: number) => (Math.ceil(x * 10 ** d) / 10 ** d).toFixed(d)
