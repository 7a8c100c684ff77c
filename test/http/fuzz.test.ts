// docs/security.md: any malformed request is answered 4xx; a 5xx is always a bug.
// Thousands of seeded random requests at every route of the API port and both
// routes of the enrollment listener, through fetch and raw sockets (HTTP/1.0,
// no Host, garbage request lines). Fails on a 5xx, a dropped connection or a
// hang, printing the seed and the request. Replay one:
//   FUZZ_SEED=S FUZZ_ONLY=N bun test test/http/fuzz.test.ts
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { connect as netConnect } from 'node:net'
import { connect as tlsConnect } from 'node:tls'
import { joinPlatform } from '../../src/agent/join.ts'
import { INITIAL_PASSWORD_FILE } from '../../src/auth/auth.ts'
import { clearPinCache } from '../../src/crypto/pin.ts'
import { startListenerPlatform, type ListenerPlatform } from '../helpers/node-side.ts'
import { newCert } from '../helpers/certs.ts'
import { freePort } from '../helpers/node-side.ts'
import { tmpDir } from '../helpers/tmp.ts'
import { AUTHORIZATIONS, body, COOKIES, ORIGINS, param, query, rng, type Material, type Rng } from './fuzz-gen.ts'

const SEED = Number(process.env.FUZZ_SEED ?? Math.floor(Math.random() * 2 ** 31))
const ONLY = process.env.FUZZ_ONLY === undefined ? undefined : Number(process.env.FUZZ_ONLY)
const SCALE = Number(process.env.FUZZ_SCALE ?? 1)
const COUNTS = { api: 8000 * SCALE, listener: 2000 * SCALE, rawApi: 1500 * SCALE, rawListener: 800 * SCALE }
const PARALLEL = 8

let p: ListenerPlatform
let cloud: ReturnType<typeof Bun.serve>
let apiPort: number
const material: Material = { certs: [], strings: [] }
const principals: { auth?: string; cookie?: string }[] = [{}]
const dir = tmpDir()

beforeAll(async () => {
  // Cloud providers answer "bad credentials" to everything: no request leaves the machine.
  cloud = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: () => Response.json({ error: { message: 'unauthorized' } }, { status: 401 }) })
  for (const k of ['HETZNER', 'DIGITALOCEAN', 'AWS', 'AZURE', 'AZURE_LOGIN', 'GCP', 'GCP_TOKEN']) process.env[`MUSTER_CLOUD_${k}_URL`] = `http://127.0.0.1:${cloud.port}`
  p = await startListenerPlatform({ enrollLimit: { perSecond: 100_000, burst: 100_000, maxInFlight: 1000 } })
  apiPort = Number(new URL(p.url).port)
  // Real credentials of every kind, so requests get past authentication too.
  const { token } = await p.client.nodes.createEnrollment({ nodeId: 'fz1' })
  await joinPlatform({ dataDir: `${dir.path}/fz1`, platformUrl: p.enrollUrl, nodeId: 'fz1', fingerprint: p.fingerprint, addresses: ['127.0.0.1'], port: await freePort(), readToken: async () => token })
  const nodeCredential = readFileSync(`${dir.path}/fz1/worker/node-credential`, 'utf8').trim()
  const password = readFileSync(`${p.dataDir}/${INITIAL_PASSWORD_FILE}`, 'utf8').trim()
  const login = await fetch(`${p.url}/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ identifier: 'superadmin', password }) })
  const session = /muster_session=([^;]+)/.exec(login.headers.get('set-cookie') ?? '')![1]!
  const viewer = (await p.platform.auth.mintApiToken({ name: 'fz-viewer', role: 'viewer' })).token
  const operator = (await p.platform.auth.mintApiToken({ name: 'fz-operator', role: 'operator' })).token
  const fleet = (await p.client.nodes.createJoinToken({ maxUses: 1000 })).token
  principals.push({ auth: `Bearer ${p.token}` }, { auth: `Bearer ${viewer}` }, { auth: `Bearer ${operator}` }, { auth: `Bearer ${nodeCredential}` }, { cookie: `muster_session=${session}` })
  material.strings.push(nodeCredential, fleet, token, p.token, viewer, session)
  for (let i = 0; i < 3; i++) material.certs.push((await newCert(`fz-cert-${i}`)).certPem)
  console.log(`fuzz seed ${SEED} (replay: FUZZ_SEED=${SEED} bun test test/http/fuzz.test.ts)`)
})

afterAll(async () => {
  await p?.close()
  cloud?.stop(true)
  dir[Symbol.dispose]()
  clearPinCache()
})

interface Sent {
  method: string
  path: string
  headers: Record<string, string>
  what: string
}
interface Outcome {
  status?: number
  error?: string
  text?: string
}

const failures: string[] = []
/**
 * What Bun's HTTP parser does itself, before muster sees a request: 505 for a
 * request line without HTTP/1.0 or 1.1, and a plain close for a method it does
 * not know (`get`, `FOO`). Nothing of muster runs for these.
 */
function runtimeRefusal(sent: Sent | string, got: Outcome): boolean {
  if (typeof sent !== 'string') return false
  if (got.status === 505) return !/^[^\r\n]* HTTP\/1\.[01]\r\n/.test(sent)
  return got.error === 'closed without an answer' && !/^(GET|HEAD|POST|PUT|DELETE|OPTIONS|PATCH|CONNECT|TRACE) /.test(sent)
}

/** FUZZ_STATS=1 prints how often each route answered each status (to see the fuzz gets past the front door). */
const stats = new Map<string, number>()
function check(kind: string, n: number, sent: Sent | string, got: Outcome): void {
  if (process.env.FUZZ_STATS) {
    const route = typeof sent === 'string' ? (/^\S+ (\/[^ ?]{0,40})/.exec(sent)?.[1] ?? 'garbage') : sent.path.split('?')[0]!.slice(0, 50)
    const key = `${kind} ${typeof sent === 'string' ? '' : sent.method} ${route} ${got.status ?? got.error}`
    stats.set(key, (stats.get(key) ?? 0) + 1)
  }
  if ((got.status !== undefined && got.status < 500) || runtimeRefusal(sent, got)) return
  const request = typeof sent === 'string' ? JSON.stringify(sent.slice(0, 1500)) : `${sent.method} ${sent.path.slice(0, 300)} ${JSON.stringify(sent.headers).slice(0, 800)}\n    body: ${JSON.stringify(sent.what.slice(0, 800))}`
  failures.push(`${kind} #${n} (FUZZ_SEED=${SEED} FUZZ_ONLY=${n}): ${got.status ?? got.error}\n    ${request}\n    answer: ${(got.text ?? '').slice(0, 300)}`)
}

/** Runs `count` numbered jobs, PARALLEL at a time; each job's randomness comes from (seed, kind, n) alone. */
async function each(kind: string, count: number, job: (r: Rng, n: number) => Promise<void>): Promise<void> {
  const salt = [...kind].reduce((a, c) => (a * 31 + c.charCodeAt(0)) >>> 0, 7)
  const ns = ONLY === undefined ? Array.from({ length: count }, (_, i) => i) : ONLY < count ? [ONLY] : []
  let next = 0
  await Promise.all(Array.from({ length: PARALLEL }, async () => {
    while (next < ns.length) {
      const n = ns[next++]!
      await job(rng((SEED ^ salt) + n * 0x9e3779b1), n)
    }
  }))
}

function headersFor(r: Rng, host: string): Record<string, string> {
  const h: Record<string, string> = {}
  const who = r.pick(principals)
  if (who.auth) h.authorization = who.auth
  if (who.cookie) h.cookie = who.cookie
  if (r.chance(0.1)) h.authorization = r.pick(AUTHORIZATIONS)
  if (r.chance(0.1)) h.cookie = r.pick(COOKIES)
  if (r.chance(0.35)) h.origin = r.chance(0.3) ? `http://${host}` : r.pick(ORIGINS)
  return h
}

async function fetchOne(kind: string, n: number, base: string, sent: Sent, bytes: Uint8Array<ArrayBuffer> | null, tls: boolean): Promise<void> {
  try {
    const res = await fetch(`${base}${sent.path}`, { method: sent.method, headers: sent.headers, body: bytes, redirect: 'manual', ...(tls ? { tls: { rejectUnauthorized: false } } : {}), signal: AbortSignal.timeout(10_000) })
    const text = await res.text()
    check(kind, n, sent, { status: res.status, text })
  } catch (e) {
    check(kind, n, sent, { error: `no answer: ${(e as Error).message}` })
  }
}

function fetchJob(kind: string, base: string, routes: { method: string; path: string }[], tls: boolean) {
  return async (r: Rng, n: number) => {
    const route = r.pick(routes)
    const method = r.chance(0.8) ? route.method : r.pick(['GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'HEAD', 'OPTIONS'])
    const path = route.path.replace(/:[a-zA-Z]+/g, () => param(r)) + query(r)
    const headers = headersFor(r, new URL(base).host)
    const b = method === 'GET' || method === 'HEAD' ? null : body(r, material, path.split(/[?#]/)[0])
    if (b?.contentType) headers['content-type'] = b.contentType
    await fetchOne(kind, n, base, { method, path, headers, what: b?.what ?? '' }, b?.bytes ?? null, tls)
  }
}

// ---- raw sockets: what fetch cannot send ----------------------------------------------

const RAW_LINES = ['GARBAGE', 'GET', 'GET /', 'GET / HTTP/9.9', 'get / HTTP/1.1', 'GET * HTTP/1.1', 'OPTIONS * HTTP/1.1', 'CONNECT 127.0.0.1:1 HTTP/1.1', 'GET http://evil.example/healthz HTTP/1.1', 'GET /%ZZ HTTP/1.1', `GET /${'a'.repeat(9000)} HTTP/1.1`, '\u0000\u0001\u0002', ' / HTTP/1.1', 'POST /login HTTP/1.1 extra']

function rawRequest(r: Rng, paths: string[], host: string, overCap: number): string {
  const path = r.pick(paths)
  const version = r.pick(['HTTP/1.0', 'HTTP/1.1'])
  if (r.chance(0.15)) return `${r.pick(RAW_LINES)}\r\n${r.chance(0.5) ? `Host: ${host}\r\n` : ''}\r\n`
  const b = body(r, material, path)
  const payload = b ? Buffer.from(b.bytes).toString('latin1') : ''
  const lines = [`${r.pick(['POST', 'POST', 'GET', 'PUT', 'DELETE'])} ${path}${query(r)} ${version}`]
  const hostChoice = r.int(6)
  if (hostChoice === 1) lines.push(`Host: ${host}`)
  else if (hostChoice === 2) lines.push(`Host: ${r.pick(['a b', '[', '', '::1', 'x:99999', '\u00ff', host + ', ' + host])}`)
  else if (hostChoice >= 3) lines.push(`Host: ${host}`, ...(r.chance(0.2) ? [`Host: other.example`] : []))
  if (b?.contentType !== null && b) lines.push(`Content-Type: ${b.contentType}`)
  const lengthChoice = r.int(8)
  if (lengthChoice === 0) lines.push(`Content-Length: ${r.pick(['abc', '-1', '1e3', '99999999999999999999', '0x10', '5, 6', ''])}`)
  else if (lengthChoice === 1) lines.push(`Content-Length: ${payload.length}`, `Content-Length: ${payload.length + 1}`)
  else if (lengthChoice === 2) lines.push('Transfer-Encoding: chunked')
  else if (lengthChoice === 3) lines.push(`Content-Length: ${overCap}`)
  else lines.push(`Content-Length: ${payload.length}`)
  const extra = headersFor(r, host)
  for (const [k, v] of Object.entries(extra)) lines.push(`${k}: ${v}`)
  if (r.chance(0.1)) lines.push(r.pick(['X-Bad\u00ff: \u00ff', 'NoColon', ': empty', 'Origin: \u00e9', 'Cookie: muster_session=\u00ff', 'Expect: 100-continue']))
  lines.push('Connection: close')
  const chunked = lengthChoice === 2 ? (r.chance(0.7) ? `${payload.length.toString(16)}\r\n${payload}\r\n0\r\n\r\n` : `zz\r\n${payload}\r\n`) : payload
  return `${lines.join('\r\n')}\r\n\r\n${lengthChoice === 3 ? '' : chunked}`
}

/** Sends raw bytes, reads until the server closes; the status of the first answer, if any. */
function raw(port: number, tls: boolean, data: string): Promise<Outcome> {
  return new Promise((resolve) => {
    let out = ''
    const done = (o: Outcome) => {
      clearTimeout(timer)
      socket.destroy()
      resolve(o)
    }
    const status = () => {
      const m = /^HTTP\/1\.[01] (\d{3})/.exec(out)
      return m ? { status: Number(m[1]), text: out } : { error: out ? 'unparsable answer' : 'closed without an answer', text: out }
    }
    const socket = tls ? tlsConnect({ port, host: '127.0.0.1', rejectUnauthorized: false }) : netConnect({ port, host: '127.0.0.1' })
    const timer = setTimeout(() => done(out ? status() : { error: 'no answer within 10 s' }), 10_000)
    socket.once(tls ? 'secureConnect' : 'connect', () => socket.write(Buffer.from(data, 'latin1')))
    socket.on('data', (d: Buffer) => {
      out += d.toString('latin1')
      // The first answer is what counts (a kept-alive connection stays open after it).
      const head = /^HTTP\/1\.[01] \d{3}[^\r]*\r\n([\s\S]*?)\r\n\r\n/.exec(out)
      const length = head && /^content-length: *(\d+)/im.exec(head[1]!)
      if (head && (!length || out.length - head[0].length >= Number(length[1]))) setTimeout(() => done(status()), 20)
    })
    socket.on('error', () => done(status()))
    socket.on('close', () => done(status()))
  })
}

/** `overCap`: a declared length the port refuses from the headers alone (so no body needs to follow). */
function rawJob(kind: string, port: number, tls: boolean, paths: string[], overCap: number) {
  return async (r: Rng, n: number) => {
    const data = rawRequest(r, paths, `127.0.0.1:${port}`, overCap)
    check(kind, n, data, await raw(port, tls, data))
  }
}

test('no request of any shape gets a 5xx or a dropped connection, on either port', async () => {
  const routes = p.platform.app.routes.map((r) => ({ method: r.method, path: r.path }))
  routes.push({ method: 'GET', path: '/no/such/route' }, { method: 'POST', path: '/api/v1/nothing' })
  const listenerRoutes = [{ method: 'POST', path: '/api/v1/nodes/enroll' }, { method: 'POST', path: '/api/v1/nodes/trust' }, { method: 'GET', path: '/api/v1/nodes' }]
  const started = Date.now()
  const timed = async (what: string, run: Promise<void>) => {
    const t = Date.now()
    await run
    if (ONLY === undefined) console.log(`fuzz: ${what} in ${Date.now() - t} ms`)
  }
  await timed('api', each('api', COUNTS.api, fetchJob('api', p.url, routes, false)))
  await timed('listener', each('listener', COUNTS.listener, fetchJob('listener', p.enrollUrl, listenerRoutes, true)))
  await timed('raw-api', each('raw-api', COUNTS.rawApi, rawJob('raw-api', apiPort, false, routes.map((x) => x.path.replace(/:[a-zA-Z]+/g, 'w1')), 2_000_000)))
  await timed('raw-listener', each('raw-listener', COUNTS.rawListener, rawJob('raw-listener', p.listener.port, true, listenerRoutes.map((x) => x.path), 70_000)))
  if (process.env.FUZZ_STATS) console.log([...stats].sort().map(([k, n]) => `${n}\t${k}`).join('\n'))
  if (failures.length > 0) console.error(`${failures.length} failing request(s), seed ${SEED}:\n${failures.slice(0, 10).join('\n')}`)
  expect(failures.slice(0, 10)).toEqual([])
  if (ONLY === undefined) console.log(`fuzz: ${Object.values(COUNTS).reduce((a, b) => a + b)} requests in ${Date.now() - started} ms`)
}, 120_000)
