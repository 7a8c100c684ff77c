// The heartbeat's dedicated route (src/http/heartbeat.ts) answers exactly what
// the framework's route answers, byte for byte, for every shape of request:
// `POST /api/v1/nodes/register` takes the dedicated route, and
// `POST /api/v1/nodes/register/` (the router's trailing-slash twin) the
// framework's, on the same Platform. Both check bodies with the one valibot
// Register schema; the dedicated route keeps the bodies it accepted, by their text.
import { describe, expect, test } from 'bun:test'
import { connect as netConnect } from 'node:net'
import { hotPathStats, plainHost } from '../../src/http/heartbeat.ts'
import { VERSION } from '../../src/version.ts'
import { enrollRaw, newCert } from '../helpers/certs.ts'
import { startPlatform, type TestPlatform } from '../helpers/platform.ts'

const PATH = '/api/v1/nodes/register'

async function enrolled(p: TestPlatform, name: string): Promise<string> {
  const { token } = await p.client.nodes.createEnrollment({ nodeId: name })
  const r = await enrollRaw(p.url, { token, nodeId: name, certPem: (await newCert()).certPem, version: VERSION })
  expect(r.status).toBe(200)
  return ((await r.json()) as { credential: string }).credential
}

/** Status, headers (without Date) and body: everything a client can see. */
async function seen(r: Response): Promise<string> {
  const headers = [...r.headers].filter(([k]) => k !== 'date').map(([k, val]) => `${k}: ${val}`)
  return `${r.status}\n${headers.sort().join('\n')}\n\n${await r.text()}`
}

function raw(port: number, data: string): Promise<string> {
  return new Promise((resolve, reject) => {
    let out = ''
    const s = netConnect({ port, host: '127.0.0.1' })
    const timer = setTimeout(() => {
      s.destroy()
      reject(new Error(`no answer; got ${JSON.stringify(out)}`))
    }, 20_000)
    s.once('connect', () => s.write(data))
    s.on('data', (d: Buffer) => (out += d.toString('latin1')))
    s.on('close', () => {
      clearTimeout(timer)
      resolve(out.replace(/^Date: .*\r\n/im, ''))
    })
    s.on('error', () => {})
  })
}

const agentBody = { version: VERSION, capacity: { cpuMillis: 2000, memoryMB: 4096 }, replicas: [] }
const replica = { project: 'web', replica: 0, state: 'running', exitCode: null, revision: 3 }

/** Bodies: valid, and one of each way to break each rule of Register. */
const BODIES: unknown[] = [
  agentBody, {}, { version: VERSION }, { extra: 1, version: VERSION }, { nodeId: 'w1' }, { nodeId: 'w2' },
  { nodeId: 'W1' }, { nodeId: '' }, { nodeId: 7 }, { nodeId: null }, { nodeId: 'a'.repeat(64) }, { nodeId: '-a' },
  { version: 'x' }, { version: 1 }, { version: null }, { version: '1.2' }, { version: '1.2.3-beta.1' }, { version: '1.2.3+' }, { version: '1234567.1.1' }, { version: `1.2.3-${'a'.repeat(65)}` },
  { capacity: null }, { capacity: [] }, { capacity: 'x' }, { capacity: {} }, { capacity: { cpuMillis: 1 } }, { capacity: { memoryMB: 1 } },
  { capacity: { cpuMillis: -1, memoryMB: 1 } }, { capacity: { cpuMillis: 1.5, memoryMB: 1 } }, { capacity: { cpuMillis: '1', memoryMB: 1 } },
  { capacity: { cpuMillis: 10_000_001, memoryMB: 1 } }, { capacity: { cpuMillis: 1, memoryMB: 1_000_000_001 } }, { capacity: { cpuMillis: 1, memoryMB: -0.5 } },
  { capacity: { cpuMillis: 10_000_000, memoryMB: 1_000_000_000 } }, { capacity: { cpuMillis: 0, memoryMB: 0, gpu: 1 } }, { capacity: { cpuMillis: Number.MAX_SAFE_INTEGER + 2, memoryMB: 1 } },
  { replicas: null }, { replicas: {} }, { replicas: 'x' }, { replicas: [replica] }, { replicas: [replica, { ...replica, replica: 1, state: 'failed', exitCode: 1 }] },
  { replicas: [{}] }, { replicas: [null] }, { replicas: [{ ...replica, project: 1 }] }, { replicas: [{ ...replica, project: 'p'.repeat(101) }] },
  { replicas: [{ ...replica, replica: -1 }] }, { replicas: [{ ...replica, replica: 0.5 }] }, { replicas: [{ ...replica, replica: '0' }] },
  { replicas: [{ ...replica, state: 'done' }] }, { replicas: [{ ...replica, state: null }] }, { replicas: [{ ...replica, exitCode: '1' }] },
  { replicas: [{ ...replica, exitCode: undefined, revision: undefined }] }, { replicas: [{ ...replica, revision: '3' }] }, { replicas: [{ ...replica, revision: 1.5 }] },
  { replicas: Array.from({ length: 10_001 }, (_, i) => ({ project: 'p', replica: i, state: 'stopped' })) },
  { replicas: [replica, { ...replica, state: 'bad' }] }, { version: 'x', capacity: { cpuMillis: -1, memoryMB: 1 } }, { nodeId: 'W', version: 'x' },
  [], [1], 'text', 7, true, null, { capacity: { cpuMillis: 1, memoryMB: 1 }, replicas: [replica], version: '0.0.1' },
  { replicas: [{ ...replica, exitCode: Number.NaN }] }, { __proto__: { version: 'x' } }, JSON.parse('{"__proto__": {"version": "x"}}'),
]

describe('the heartbeat route', () => {
  test('answers byte for byte what the framework route answers, for every body, content type and credential', async () => {
    await using p = await startPlatform({ remoteDispatch: true })
    const w1 = await enrolled(p, 'w1')
    const w3 = await enrolled(p, 'w3')
    await p.client.nodes.revoke('w3')
    const rotated = await enrolled(p, 'w4')
    await p.client.nodes.rotate('w4')
    const [name, gen, mac] = w1.slice(4).split('.') as [string, string, string]
    // Join tokens are refused as bearers on every route (docs/nodes.md), this one too.
    const joinToken = (await p.client.nodes.createJoinToken({ maxUses: 5 })).token
    const enrollToken = (await p.client.nodes.createEnrollment({ nodeId: 'w9' })).token
    const credentials = [
      w1, w3, rotated, joinToken, enrollToken, joinToken.toUpperCase(), `Bearer ${w1}`, `mnc_${name}.${Number(gen) + 1}.${mac}`, `mnc_${name}.${gen}.${mac.slice(0, -1)}${mac.endsWith('A') ? 'B' : 'A'}`,
      `mnc_nobody.1.${mac}`, `mnc_${name}.${gen}.${mac}x`, `mnc_${name}.0${gen}.${mac}`, 'mnc_', 'mjt_abcdefghijklmnop.x', p.token, '', `mnc_local.1.${mac}`,
    ]
    const auths = [...credentials.map((c) => `Bearer ${c}`), `bearer ${w1}`, `Bearer  ${w1}`, `Bearer ${w1} `, `Basic ${w1}`, w1, null]
    const contentTypes = ['application/json', 'application/json; charset=utf-8', 'APPLICATION/JSON', 'text/plain', 'application/x-www-form-urlencoded', null]
    const bodies = [...BODIES.map((b) => JSON.stringify(b)), '', '{', '{"version":', 'null', ' {} ', '{"a":1}{', 'a=b&c=d', '\u0000', '{"version":"1.2.3","version":"x"}']
    const stats = hotPathStats.fast
    const cachedBefore = hotPathStats.cachedBodies
    const send = async (path: string, auth: string | null, ct: string | null, body: string | null, extra: Record<string, string> = {}) => {
      const headers: Record<string, string> = { ...extra }
      if (auth !== null) headers.authorization = auth
      if (ct !== null) headers['content-type'] = ct
      return seen(await fetch(`${p.url}${path}`, { method: 'POST', headers, body }))
    }
    const compare = async (label: string, auth: string | null, ct: string | null, body: string | null, extra?: Record<string, string>) => {
      // The framework first, so a first heartbeat (which changes the state) is not what differs.
      const framework = await send(`${PATH}/`, auth, ct, body, extra)
      const hot = await send(PATH, auth, ct, body, extra)
      expect({ label, hot }).toEqual({ label, hot: framework })
    }
    for (const body of bodies) await compare(`body ${body.slice(0, 80)}`, `Bearer ${w1}`, 'application/json', body)
    for (const auth of auths) for (const body of [JSON.stringify(agentBody), '{"nodeId":"w1"}', '{"version":"x"}']) await compare(`auth ${auth}`, auth, 'application/json', body)
    for (const ct of contentTypes) for (const body of [JSON.stringify(agentBody), '{', 'a=b']) await compare(`content-type ${ct}`, `Bearer ${w1}`, ct, body)
    await compare('no body', `Bearer ${w1}`, 'application/json', null)
    await compare('cross-site cookie, no credential', null, 'text/plain', '{}', { cookie: 'muster_session=x', origin: 'https://evil.example' })
    await compare('cookie and credential', `Bearer ${w1}`, 'application/json', '{}', { cookie: 'muster_session=x', origin: 'https://evil.example' })
    // The dedicated route did answer the ordinary heartbeats (else this test compares the framework with itself).
    expect(hotPathStats.fast - stats).toBeGreaterThan(20)
    // … and answered repeated bodies from its cache of accepted bodies (else the cache is not what was compared).
    expect(hotPathStats.cachedBodies - cachedBefore).toBeGreaterThan(10)
    const before = hotPathStats.fast
    await send(`${PATH}/`, `Bearer ${w1}`, 'application/json', JSON.stringify(agentBody))
    expect(hotPathStats.fast).toBe(before)
    await send(PATH, `Bearer ${w1}`, 'application/json', JSON.stringify(agentBody))
    expect(hotPathStats.fast).toBe(before + 1)

    const port = Number(new URL(p.url).port)
    const body = JSON.stringify(agentBody)
    for (const req of [
      (path: string) => `POST ${path} HTTP/1.0\r\nAuthorization: Bearer ${w1}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
      (path: string) => `POST ${path} HTTP/1.1\r\nHost: [\r\nAuthorization: Bearer ${w1}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`,
      (path: string) => `POST ${path} HTTP/1.1\r\nHost: a b\r\nAuthorization: Bearer ${w1}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`,
      (path: string) => `POST ${path}?x=1 HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${w1}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`,
      (path: string) => `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${w1}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n${body.length.toString(16)}\r\n${body}\r\n0\r\n\r\n`,
    ]) {
      expect(await raw(port, req(PATH))).toBe(await raw(port, req(`${PATH}/`)))
    }
  })
})

test('a Host the dedicated route lets through without the full check is one the URL parser takes', () => {
  const pieces = ['a', 'Z', '0', '9', '-', '.', ':', '[', ']', '%', '_', '1', '255', '256', '999', '0x1', 'localhost', 'example.com', '65535', '65536', '00', '@', ' ', '']
  let accepted = 0
  for (let i = 0; i < 20_000; i++) {
    let host = ''
    const n = 1 + ((i * 7919) % 6)
    for (let k = 0; k < n; k++) host += pieces[(i * 31 + k * 17 + ((i >> 3) % 11) * k) % pieces.length]
    if (plainHost(host)) {
      accepted++
      expect({ host, parses: URL.canParse(`http://${host}/api/v1/nodes/register`) }).toEqual({ host, parses: true })
    }
  }
  for (const host of ['127.0.0.1:7380', 'localhost', 'platform.example.com:443', '10.0.0.255']) expect(plainHost(host)).toBe(true)
  for (const host of ['1.2.3.999', '999', '0x7f.1', 'a..b', '[::1]:80', 'a:99999', 'a:', ':80', '', 'a b']) expect(plainHost(host)).toBe(false)
  expect(accepted).toBeGreaterThan(100)
})
