// Request generators for the HTTP fuzz test: every choice comes from one
// seeded PRNG, so a seed and a request number give the same request again.

/** mulberry32: small, fast, good enough to pick test inputs. */
export function rng(seed: number) {
  let a = seed >>> 0
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
  const int = (n: number) => Math.floor(next() * n)
  const pick = <T>(xs: readonly T[]): T => xs[int(xs.length)]!
  const chance = (p: number) => next() < p
  const bytes = (n: number): Uint8Array<ArrayBuffer> => Uint8Array.from({ length: n }, () => int(256))
  return { next, int, pick, chance, bytes }
}
export type Rng = ReturnType<typeof rng>

/** Field names the routes read, and a few that should never matter. */
const KEYS = [
  'token', 'nodeId', 'certPem', 'url', 'version', 'identifier', 'password', 'name', 'role', 'vouch', 'maxUses',
  'namePattern', 'ttlMinutes', 'label', 'replace', 'capacity', 'cpuMillis', 'memoryMB', 'replicas', 'project',
  'replica', 'state', 'exitCode', 'revision', 'drained', 'command', 'env', 'cpu', 'memory', 'officeId', 'note',
  'rotate', 'provider', 'credentials', 'region', 'size', 'enabled', 'maxMachines', 'cooldownMinutes', 'payload',
  'signature', 'nonce', 'keyId', 'proof', 'ttlDays', 'officeToken', 'call', 'body', 'id', 'v', 'after', 'wait',
  '__proto__', 'constructor', 'prototype', 'toString', 'a[0]', 'a.b', 'x[99999999]',
] as const

const STRINGS = [
  '', ' ', 'a', 'w1', 'local', 'superadmin', 'viewer', 'operator', 'office-a', 'hetzner', 'aws', 'rack1-*', '1.0.0',
  '0.1.0', '999.999.999', 'https://127.0.0.1:1', 'https://[::1]:99999', 'http://[', 'https://x y', 'javascript:x',
  'mjt_aaaaaaaaaaaaaaaa.' + 'A'.repeat(43), 'mat_aaaaaaaaaaaaaaaa.' + 'A'.repeat(43), 'mnc_w1.1.' + 'A'.repeat(43),
  '-----BEGIN CERTIFICATE-----\nMAA=\n-----END CERTIFICATE-----\n', '-----BEGIN CERTIFICATE-----', '\u0000', '\ud800',
  '💥', '%ZZ', '../../etc/passwd', '{"a":', 'null', 'true', '1e999', '-0', 'x'.repeat(300), 'y'.repeat(20_000),
] as const

const NUMBERS = [0, -1, 1, 1.5, 60, 1440, 1441, 2 ** 31, 2 ** 53, -(2 ** 53), 1e308, -1e-308] as const

export interface Material {
  /** Valid certificate PEMs to mutate (a reader must survive any byte of them). */
  certs: string[]
  /** Real credentials: an enrolled node's, a session cookie value, tokens. */
  strings: string[]
}

function mutatedCert(r: Rng, pem: string): string {
  const der = Buffer.from(pem.replace(/-----[^-]+-----|\s/g, ''), 'base64')
  const op = r.int(5)
  let out: Buffer
  if (op === 0) out = der.subarray(0, r.int(der.length))
  else if (op === 1) out = Buffer.concat([der, Buffer.from(r.bytes(1 + r.int(8)))])
  else {
    out = Buffer.from(der)
    for (let i = 0, n = 1 + r.int(op === 2 ? 2 : 30); i < n; i++) out[r.int(out.length)] = r.int(256)
  }
  const b64 = out.toString('base64')
  return r.chance(0.9) ? `-----BEGIN CERTIFICATE-----\n${b64.replace(/.{64}/g, '$&\n')}\n-----END CERTIFICATE-----\n` : b64
}

export function value(r: Rng, m: Material, depth = 0): unknown {
  const k = r.int(depth > 2 ? 5 : 8)
  if (k === 0) return r.pick([null, true, false])
  if (k === 1) return r.pick(NUMBERS)
  if (k === 2) return r.pick(STRINGS)
  if (k === 3) return r.chance(0.5) && m.certs.length > 0 ? mutatedCert(r, r.pick(m.certs)) : r.pick(m.certs.length > 0 ? m.certs : STRINGS)
  if (k === 4) return m.strings.length > 0 ? r.pick(m.strings) : 'x'
  if (k === 5) return Array.from({ length: r.int(4) }, () => value(r, m, depth + 1))
  return object(r, m, depth + 1)
}

export function object(r: Rng, m: Material, depth = 0): Record<string, unknown> {
  const o: Record<string, unknown> = {}
  for (let i = 0, n = r.int(7); i < n; i++) Object.defineProperty(o, r.pick(KEYS), { value: value(r, m, depth), enumerable: true, configurable: true, writable: true })
  return o
}

/** Near-valid bodies for the routes that read one: the right keys, mostly the right types, so checks past the shape run too. */
const TEMPLATES: Record<string, Record<string, 'string' | 'number' | 'boolean' | 'name' | 'cert' | 'object' | 'array'>> = {
  '/login': { identifier: 'name', password: 'string' },
  '/api/v1/api-tokens': { name: 'name', role: 'string' },
  '/api/v1/nodes/enrollments': { nodeId: 'name', ttlMinutes: 'number', replace: 'boolean' },
  '/api/v1/join-tokens': { maxUses: 'number', namePattern: 'string', ttlMinutes: 'number', label: 'string' },
  '/api/v1/nodes/enroll': { token: 'string', nodeId: 'name', certPem: 'cert', url: 'string', version: 'string' },
  '/api/v1/nodes/register': { nodeId: 'name', version: 'string', capacity: 'object', replicas: 'array' },
  '/api/v1/projects': { name: 'name', command: 'array', env: 'object', replicas: 'number', cpu: 'number', memory: 'number' },
  '/api/office/vouch': { vouch: 'string' },
  '/api/office/calls': { call: 'string', payload: 'object', signature: 'string', nonce: 'string' },
  '/api/v1/federation/join-tokens': { officeId: 'name', label: 'string', note: 'string', rotate: 'boolean' },
  '/api/v1/federation/register': { token: 'string', officeId: 'name', advertiseUrl: 'string', nonce: 'string', version: 'string' },
  '/api/v1/cloud/connections': { provider: 'name', credentials: 'string' },
  '/api/v1/cloud/provisions': { provider: 'name', name: 'name', region: 'name', size: 'name', role: 'string' },
  '/api/v1/cloud/scaling': { enabled: 'boolean', maxMachines: 'number', cooldownMinutes: 'number', provider: 'name' },
  drain: { drained: 'boolean' },
  rebind: { ttlMinutes: 'number' },
}

const NAMES = ['w1', 'fz1', 'local', 'superadmin', 'office-a', 'hetzner', 'aws', 'fsn1', 'cx22', 'Bad Name', '', 'a'.repeat(64)] as const

export function template(r: Rng, m: Material, path: string): Record<string, unknown> | undefined {
  const t = TEMPLATES[path] ?? TEMPLATES[path.split('/').pop()!]
  if (!t) return undefined
  const o: Record<string, unknown> = {}
  for (const [k, type] of Object.entries(t)) {
    if (r.chance(0.15)) continue
    if (r.chance(0.1)) o[k] = value(r, m)
    else if (type === 'name') o[k] = r.pick(NAMES)
    else if (type === 'string') o[k] = r.chance(0.5) && m.strings.length > 0 ? r.pick(m.strings) : r.pick(STRINGS)
    else if (type === 'number') o[k] = r.pick(NUMBERS)
    else if (type === 'boolean') o[k] = r.chance(0.5)
    else if (type === 'cert') o[k] = r.chance(0.5) ? r.pick(m.certs) : mutatedCert(r, r.pick(m.certs))
    else if (type === 'array') o[k] = Array.from({ length: r.int(3) }, () => (r.chance(0.8) ? r.pick(STRINGS) : object(r, m, 2)))
    else o[k] = r.chance(0.5) ? { cpuMillis: r.pick(NUMBERS), memoryMB: r.pick(NUMBERS), A_B: r.pick(STRINGS) } : object(r, m, 2)
  }
  return o
}

export interface Body {
  contentType: string | null
  bytes: Uint8Array<ArrayBuffer>
  what: string
}

const enc = new TextEncoder()
const CONTENT_TYPES = [
  'application/json', 'application/json; charset=utf-8', 'APPLICATION/JSON', 'application/jsonx', 'xxxxxxxxxxxxj',
  'application/x-www-form-urlencoded', 'multipart/form-data', 'multipart/form-data; boundary=', 'text/plain',
  'text/html', 'application/octet-stream', 'xxxxxxxxxxxxr', 'xxxxxxxxxxxxo', 'a/b; c="', ';;;', '', 'image/png',
] as const

function formText(r: Rng, o: Record<string, unknown>): string {
  const e = (s: string) => encodeURIComponent(s.toWellFormed())
  const parts = Object.entries(o).map(([k, v]) => `${e(k)}=${e(typeof v === 'string' ? v : (JSON.stringify(v) ?? ''))}`)
  if (r.chance(0.3)) parts.push(r.pick(['%', '%ZZ', '=', '&&', 'a[1]=1&a[0]=2', '__proto__[x]=1', 'a.b.c=1', 'constructor.prototype.x=1', 'x=%E0%A4%A']))
  return parts.join('&')
}

function multipart(r: Rng, o: Record<string, unknown>, boundary: string): string {
  const parts = Object.entries(o).map(([k, v]) => {
    const file = r.chance(0.2) ? `; filename="${r.pick(['a.txt', '', '"', '../x'])}"\r\nContent-Type: ${r.pick(CONTENT_TYPES)}` : ''
    return `--${boundary}\r\nContent-Disposition: form-data; name="${k}"${file}\r\n\r\n${typeof v === 'string' ? v : JSON.stringify(v)}\r\n`
  })
  return `${parts.join('')}--${boundary}--\r\n`
}

export function body(r: Rng, m: Material, path = ''): Body | null {
  const shape = r.int(10)
  const o = (r.chance(0.6) ? template(r, m, path) : undefined) ?? object(r, m)
  const truncate = (s: string) => (r.chance(0.15) ? s.slice(0, r.int(s.length + 1)) : s)
  if (shape === 0) return null
  if (shape <= 3) {
    const json = JSON.stringify(r.chance(0.8) ? o : value(r, m)) ?? 'null'
    const text = truncate(r.chance(0.1) ? json + r.pick(['}', ']', 'x', '\u0000', ',']) : json)
    return { contentType: r.chance(0.85) ? r.pick(CONTENT_TYPES.slice(0, 5)) : r.pick(CONTENT_TYPES), bytes: enc.encode(text), what: `json ${text}` }
  }
  if (shape <= 5) {
    const text = truncate(formText(r, o))
    return { contentType: r.chance(0.9) ? 'application/x-www-form-urlencoded' : r.pick(CONTENT_TYPES), bytes: enc.encode(text), what: `form ${text}` }
  }
  if (shape <= 7) {
    const boundary = r.pick(['b0undary', 'x', '----WebKitFormBoundary7MA4YWxkTrZu0gW', '"q"'])
    const text = truncate(multipart(r, o, boundary.replace(/"/g, '')))
    const type = r.chance(0.8) ? `multipart/form-data; boundary=${boundary}` : r.pick(CONTENT_TYPES)
    return { contentType: type, bytes: enc.encode(text), what: `multipart ${text}` }
  }
  if (shape === 8) {
    const text = truncate(r.pick(STRINGS) + JSON.stringify(value(r, m)))
    return { contentType: r.pick(['text/plain', 'text/plain; charset=latin1', ...CONTENT_TYPES]), bytes: enc.encode(text), what: `text ${text}` }
  }
  const bytes = r.bytes(r.pick([0, 1, 7, 100, 3000]))
  return { contentType: r.chance(0.2) ? null : r.pick(CONTENT_TYPES), bytes, what: `binary ${Buffer.from(bytes).toString('hex').slice(0, 200)}` }
}

export const ORIGINS = [
  'https://evil.example', 'null', 'http://[', 'x', '://', 'http://a b', 'http://x/path', 'javascript:alert(1)',
  'http://' + 'h'.repeat(3000), 'http://127.0.0.1:1', 'file://', 'http://user@host', 'http://[::1', '%', 'http:///',
] as const
export const AUTHORIZATIONS = [
  'Bearer', 'Bearer ', 'Basic YTpi', 'Bearer mat_', 'Bearer mat_aaaaaaaaaaaaaaaa.' + 'A'.repeat(43), 'Bearer mnc_x.1.y',
  'Bearer mnc_w1.99999999999999999999.' + 'A'.repeat(43), 'Bearer mjt_x', 'bearer  x  y', 'Bearer ' + 'z'.repeat(5000), 'Digest x',
] as const
export const COOKIES = ['muster_session=', 'muster_session=%ZZ', ';;;', '=', 'muster_session=a; muster_session=b', 'a=b', 'muster_session="q"', 'muster_session=' + 'c'.repeat(5000)] as const

/** A path parameter: plausible names and garbage. */
export function param(r: Rng): string {
  return r.pick(['w1', 'fz1', 'local', 'office-a', 'hetzner', 'aws', 'digitalocean', 'x', 'a'.repeat(64), '%ZZ', '..', '%2e%2e', '%00', '%F0%9F%92%A5', '-', 'A', '1', ''])
}

export function query(r: Rng): string {
  if (r.chance(0.7)) return ''
  return r.pick(['?after=1&wait=0', '?after=99999999999999&wait=1', '?wait=abc', '?%ZZ', '?a=b&a=c', '?region=%00', '?region=fsn1', '?v=x', '?v=' + 'v'.repeat(2000), '?', '?&&=', '?__proto__=1', '#frag'])
}
