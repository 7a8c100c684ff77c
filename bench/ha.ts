// Heartbeats per second across two Platforms on one PostgreSQL, next to one
// Platform on SQLite, in the same run (SPEC §16.9, README "Running several
// Platforms"). N enrolled nodes, each with its own credential; wrk drives the
// load with a Lua script that rotates the credentials; for the pair one wrk
// per Platform at the same time, each with half the nodes (as Agents spread
// themselves: a node uses one Platform at a time).
//   bun run build && bun bench/ha.ts [--nodes 1000] [--seconds 10] [--connections 64] [--also-one-on-postgres]
// Needs wrk and PostgreSQL's server binaries (a throwaway cluster is started).
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { signEnrollProof } from '../src/crypto/enroll-proof.ts'
import { generateKeyAndCert } from '../src/crypto/x509.ts'
import { startThrowawayPostgres } from '../src/demo/postgres.ts'
import { startPlatform } from './lib.ts'

const arg = (name: string, dflt: number) => {
  const i = process.argv.indexOf(`--${name}`)
  return i > 0 ? Number(process.argv[i + 1]) : dflt
}
const nodes = arg('nodes', 1000)
const seconds = arg('seconds', 10)
const connections = arg('connections', 64)
const work = mkdtempSync(join(tmpdir(), 'muster-bench-ha-'))
const body = JSON.stringify({ version: '0.1.0', capacity: { cpuMillis: 2000, memoryMB: 4096 }, replicas: [] })

async function enrollAll(url: string, token: string, prefix: string): Promise<string[]> {
  const res = await fetch(`${url}/api/v1/join-tokens`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify({ maxUses: nodes }) })
  const { token: join } = (await res.json()) as { token: string }
  const out: string[] = []
  for (let i = 0; i < nodes; i++) {
    const { certPem, keyPem } = await generateKeyAndCert({ commonName: `${prefix}${i}`, dnsNames: [], ipAddresses: ['127.0.0.1'], days: 30 })
    const nodeId = `${prefix}-${i}`
    const proof = signEnrollProof({ keyPem, certPem, nodeId, token: join })
    const r = await fetch(`${url}/api/v1/nodes/enroll`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ token: join, nodeId, certPem, version: '0.1.0', ...proof }) })
    out.push(((await r.json()) as { credential: string }).credential)
  }
  return out
}

/** A wrk Lua script that sends heartbeats, each with the next node's credential. */
function script(name: string, credentials: string[]): string {
  const file = join(work, `${name}.lua`)
  writeFileSync(
    file,
    `local creds = {${credentials.map((c) => `"${c}"`).join(',')}}
local body = '${body}'
local i = 0
request = function()
  i = i + 1
  return wrk.format("POST", "/api/v1/nodes/register", { ["Content-Type"] = "application/json", ["Authorization"] = "Bearer " .. creds[(i % #creds) + 1] }, body)
end
`,
  )
  return file
}

interface Wrk {
  perSecond: number
  requests: number
  non2xx: number
  errors: number
  p50: string
  p99: string
}

async function wrk(url: string, lua: string, threads: number, conns: number): Promise<Wrk> {
  const p = Bun.spawn(['wrk', `-t${threads}`, `-c${conns}`, `-d${seconds}s`, '--latency', '-s', lua, url], { stdout: 'pipe', stderr: 'pipe' })
  const out = await new Response(p.stdout).text()
  await p.exited
  const num = (re: RegExp) => Number(out.match(re)?.[1] ?? 0)
  const errors = (out.match(/Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/)?.slice(1) ?? []).reduce((a, b) => a + Number(b), 0)
  return {
    perSecond: num(/Requests\/sec:\s+([\d.]+)/),
    requests: num(/(\d+) requests in/),
    non2xx: num(/Non-2xx or 3xx responses: (\d+)/),
    errors,
    p50: out.match(/\s50%\s+(\S+)/)?.[1] ?? '?',
    p99: out.match(/\s99%\s+(\S+)/)?.[1] ?? '?',
  }
}

const line = (name: string, r: Wrk) => `${name.padEnd(34)} ${r.perSecond.toFixed(0).padStart(7)} heartbeats/s   p50 ${r.p50}   p99 ${r.p99}   (${r.requests} requests, ${r.non2xx} non-2xx, ${r.errors} socket errors)`

// Its own directory: as root the cluster runs as the postgres user, who cannot enter `work` (0700).
const pgDir = mkdtempSync(join(tmpdir(), 'muster-bench-pg-'))
const pg = await startThrowawayPostgres(pgDir, ['max_connections=200'])
const stops: (() => Promise<void>)[] = []
try {
  // one Platform on SQLite
  const sqlite = await startPlatform([])
  stops.push(() => sqlite.stop())
  const sqliteCreds = await enrollAll(sqlite.url, sqlite.token, 'sq')
  // two Platforms on PostgreSQL, the second with a copy of the first's master key
  const a = await startPlatform(['--database', pg.url])
  stops.push(() => a.stop())
  const bDir = join(work, 'b')
  mkdirSync(join(bDir, 'platform'), { recursive: true, mode: 0o700 })
  copyFileSync(join(a.dataDir, 'platform', 'master.key'), join(bDir, 'platform', 'master.key'))
  const b = await startPlatform(['--database', pg.url], { dataDir: bDir })
  stops.push(() => b.stop())
  const pgCreds = await enrollAll(a.url, a.token, 'pg')

  const one = await wrk(sqlite.url, script('sqlite', sqliteCreds), 2, connections)
  // the same total connections, half to each Platform, at the same time
  // As Agents do: each node uses one Platform (half the fleet on each)
  const half = (odd: number) => pgCreds.filter((_, i) => i % 2 === odd)
  const [ra, rb] = await Promise.all([wrk(a.url, script('pg-a', half(0)), 1, connections / 2), wrk(b.url, script('pg-b', half(1)), 1, connections / 2)])
  // the same load on one of the two, for comparison: what the second Platform adds
  // the whole load on platform-a while platform-b runs idle beside it: what sharing the store costs by itself
  const alone = process.argv.includes('--also-one-on-postgres') ? await wrk(a.url, script('pg-alone', pgCreds), 2, connections) : undefined
  const pair: Wrk = { perSecond: ra.perSecond + rb.perSecond, requests: ra.requests + rb.requests, non2xx: ra.non2xx + rb.non2xx, errors: ra.errors + rb.errors, p50: `${ra.p50}/${rb.p50}`, p99: `${ra.p99}/${rb.p99}` }
  console.log(`heartbeats: ${nodes} enrolled nodes, credentials rotating per request, ${connections} connections, ${seconds}s per run (wrk)`)
  console.log(line('one Platform, SQLite', one))
  console.log(line('two Platforms, one PostgreSQL', pair))
  console.log(line('  platform-a', ra))
  console.log(line('  platform-b', rb))
  if (alone) console.log(line('all load on a, b idle, PostgreSQL', alone))
  console.log(`ratio two-on-PostgreSQL / one-on-SQLite: ${(pair.perSecond / one.perSecond).toFixed(2)}`)
} finally {
  for (const stop of stops.reverse()) await stop().catch(() => {})
  pg.stop()
  rmSync(pgDir, { recursive: true, force: true })
  rmSync(work, { recursive: true, force: true })
}
