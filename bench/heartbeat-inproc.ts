// The heartbeat route's own JavaScript, measured in one process: the route
// (src/http/heartbeat.ts, as the Platform mounts it) and a bare handler (what
// bench/bare-server.ts runs: read the body, answer a fixed JSON) are called
// on the same requests, round after round, and the CPU each took is read
// from the thread's clock (process.threadCpuUsage) and from all threads
// (process.cpuUsage: the collector's helpers too). Other work on the machine
// lengthens neither much, so two builds compare here when rates would not;
// what Bun.serve does natively (parsing, the socket) is the same for both
// and is left out. `--against DIR` also measures another checkout's src/ in the same process, round
// after round (two builds compared in one run).
//   bun bench/heartbeat-inproc.ts [--nodes 1000] [--requests 10000] [--rounds 15] [--against DIR]
// Ends with: heartbeat-inproc: route R us, bare B us of the thread's CPU a request (the least of N rounds) …
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'

const arg = (name: string, dflt: string) => {
  const i = process.argv.indexOf(`--${name}`)
  return i > 0 ? process.argv[i + 1]! : dflt
}
const NODES = Number(arg('nodes', '1000'))
const REQUESTS = Number(arg('requests', '10000'))
const ROUNDS = Number(arg('rounds', '15'))
const SRC = resolve(arg('src', join(import.meta.dir, '..', 'src')))
const AGAINST = process.argv.includes('--against') ? resolve(arg('against', '')) : undefined

const BODY_TEXT = (VERSION: string) => JSON.stringify({ version: VERSION, capacity: { cpuMillis: 2000, memoryMB: 4096 }, replicas: [] })

/** A Platform from `src` with NODES nodes; its heartbeat route and the requests it takes (one a node, rotating). */
async function setUp(src: string) {
  const { Platform } = await import(join(src, 'platform', 'platform.ts'))
  const { heartbeatRoutes } = await import(join(src, 'http', 'heartbeat.ts'))
  const { VERSION } = await import(join(src, 'version.ts'))
  const dataDir = mkdtempSync(join(tmpdir(), 'muster-inproc-'))
  const platform = await Platform.open({ dataDir, port: 0, host: '127.0.0.1', remoteDispatch: true })
  const url = await platform.listen()
  const fabric = platform.fabric
  // Nodes as enrollment leaves them (test/helpers/seed-nodes.ts writes the same rows), read into the registry.
  const names = Array.from({ length: NODES }, (_, i) => `node-${i}`)
  const sha = (name: string) => new Bun.CryptoHasher('sha256').update(`bench ${name}`).digest('hex')
  await fabric.db.tx(async (t: { run: (sql: string, ...p: unknown[]) => Promise<number> }) => {
    for (const name of names) await t.run("INSERT INTO nodes (name, auth, cert_sha256, token_id, version, enrolled_at) VALUES (?1, 'enrolled', ?2, 'benchtoken000000', ?3, ?4)", name, sha(name), VERSION, Date.now())
  })
  for (const name of names) await fabric.registry.refresh(name)
  const credentials = names.map((name) => fabric.credentials.issue(name, sha(name), 1))
  const body = BODY_TEXT(VERSION)
  const host = new URL(url).host
  const request = (i: number) =>
    new Request(`${url}/api/v1/nodes/register`, {
      method: 'POST',
      headers: { accept: 'application/json', authorization: `Bearer ${credentials[i % NODES]}`, 'content-type': 'application/json', connection: 'keep-alive', 'user-agent': 'Bun/1.4.4', host, 'accept-encoding': 'gzip, deflate, br, zstd', 'content-length': String(body.length) },
      body,
    })
  const fallback = () => new Response('fallback', { status: 500 })
  const route = heartbeatRoutes(platform, fallback)['/api/v1/nodes/register'].POST as (req: Request, server: unknown) => Promise<Response>
  const answer = await (await route(request(0), undefined)).text()
  if (!answer.startsWith('{"nodeId":"node-0"')) throw new Error(`the route did not answer the heartbeat: ${answer}`)
  return {
    route,
    request,
    answer,
    close: async () => {
      await platform.close()
      rmSync(dataDir, { recursive: true, force: true })
    },
  }
}

const mine = await setUp(SRC)
const other = AGAINST ? await setUp(AGAINST) : undefined
const request = mine.request
const route = mine.route
const answer = mine.answer
const bare = async (req: Request) => {
  await req.arrayBuffer()
  return new Response(answer, { headers: { 'content-type': 'application/json' } })
}

const thread = () => {
  const u = process.threadCpuUsage()
  return u.user + u.system
}
const all = () => {
  const u = process.cpuUsage()
  return u.user + u.system
}
/** µs of CPU a request (thread, all threads), the requests made beforehand (their making is not counted). */
async function round(handler: (req: Request, server: unknown) => Promise<Response>, make = request): Promise<[number, number]> {
  const reqs = Array.from({ length: REQUESTS }, (_, i) => make(i))
  Bun.gc(true)
  const t0 = thread()
  const a0 = all()
  for (const r of reqs) {
    const res = await handler(r, undefined)
    if (res.status !== 200) throw new Error(`answered ${res.status}`)
  }
  return [(thread() - t0) / REQUESTS, (all() - a0) / REQUESTS]
}
for (let i = 0; i < 2; i++) {
  await round(route)
  if (other) await round(other.route, other.request)
  await round(bare)
}
const r: number[][] = [[], [], [], [], [], []]
for (let i = 0; i < ROUNDS; i++) {
  const [rt, ra] = await round(route)
  const [bt, ba] = await round(bare)
  r[0]!.push(rt)
  r[1]!.push(ra)
  r[2]!.push(bt)
  r[3]!.push(ba)
  if (other) {
    const [ot, oa] = await round(other.route, other.request)
    r[4]!.push(ot)
    r[5]!.push(oa)
  }
}
// The least of the rounds: other work on the machine only ever adds to a round's CPU.
const least = (xs: number[]) => Math.min(...xs)
const load = (await Bun.file('/proc/loadavg').text()).split(' ')[0]
await mine.close()
await other?.close()
const f = (x: number) => x.toFixed(2)
const against = other ? `; ${AGAINST}: ${f(least(r[4]!))} us (all threads ${f(least(r[5]!))} us), its own ${f(least(r[4]!) - least(r[2]!))} us` : ''
console.log(
  `heartbeat-inproc: route ${f(least(r[0]!))} us, bare ${f(least(r[2]!))} us of the thread's CPU a request (the least of ${ROUNDS} rounds of ${REQUESTS}); all threads: route ${f(least(r[1]!))} us, bare ${f(least(r[3]!))} us; the route's own ${f(least(r[0]!) - least(r[2]!))} us${against}; load ${load}`,
)
process.exit(0)
