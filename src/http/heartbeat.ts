// The heartbeat's own route, ahead of the framework (issue 16): Bun's router
// sends `POST /api/v1/nodes/register` here; every other request, and any
// heartbeat whose shape is not the ordinary one (no credential, a body that is
// not JSON), goes to the framework, whose route answers as it always has.
// What this route answers is byte for byte what the framework route answers
// (test/http/heartbeat-route.test.ts compares the two for every shape).
import { MusterError } from '../errors.ts'
import { acceptHeartbeat, currentNode, type HeartbeatBody } from '../fabric/heartbeat.ts'
import type { ReplicaStatus } from '../fabric/registry.ts'
import { log } from '../log.ts'
import type { Services } from '../services.ts'
import { errorResponse } from './app.ts'
import { joinTokenAsBearer, malformedRequest } from './request.ts'
import { NODE_NAME } from './validate.ts'

/** How many heartbeats took the allocation-free credential check (tests read it). */
export const hotPathStats = { fast: 0 }

const VERSION_TEXT = /^\d{1,6}\.\d{1,6}\.\d{1,6}([-+][0-9A-Za-z.-]{1,64})?$/
const STATES = new Set(['pending', 'running', 'failed', 'stopped'])
const NODE_NAME_MESSAGE = 'expected a name like worker-1 (lowercase letters, digits, dashes; at most 63)'

const bad = (field: string, message: string) => new MusterError('invalid-request', `Invalid ${field}: ${message}`, { field })
const type = (field: string, expected: string) => bad(field, `Invalid type: Expected ${expected}`)
const isObject = (x: unknown): x is Record<string, unknown> => typeof x === 'object' && x !== null

/** number → integer → ≥ min → ≤ max, in valibot's order and words. */
function integerIn(field: string, x: unknown, min: number, max?: number): MusterError | null {
  if (typeof x !== 'number' || Number.isNaN(x)) return type(field, 'number')
  if (!Number.isInteger(x)) return bad(field, 'Invalid integer:')
  if (x < min) return bad(field, `Invalid value: Expected >=${min}`)
  if (max !== undefined && x > max) return bad(field, `Invalid value: Expected <=${max}`)
  return null
}

/** A required key: missing is "Invalid key", present is checked by `check`. */
function required(o: Record<string, unknown>, key: string, field: string, check: (x: unknown) => MusterError | null): MusterError | null {
  return key in o ? check(o[key]) : bad(field, `Invalid key: Expected "${key}"`)
}

function checkReplica(r: unknown, at: string): MusterError | null {
  if (!isObject(r)) return type(at, 'Object')
  return (
    required(r, 'project', `${at}.project`, (x) => (typeof x !== 'string' ? type(`${at}.project`, 'string') : x.length > 100 ? bad(`${at}.project`, 'Invalid length: Expected <=100') : null)) ??
    required(r, 'replica', `${at}.replica`, (x) => integerIn(`${at}.replica`, x, 0)) ??
    required(r, 'state', `${at}.state`, (x) => (typeof x === 'string' && STATES.has(x) ? null : type(`${at}.state`, '("pending" | "running" | "failed" | "stopped")'))) ??
    ('exitCode' in r && r.exitCode !== undefined && r.exitCode !== null && (typeof r.exitCode !== 'number' || Number.isNaN(r.exitCode)) ? type(`${at}.exitCode`, 'number') : null) ??
    ('revision' in r && r.revision !== undefined && (typeof r.revision !== 'number' || Number.isNaN(r.revision)) ? type(`${at}.revision`, 'number') : null)
  )
}

/**
 * The Register rules (src/http/routes/nodes.ts), checked by hand: the first
 * broken rule in the schema's order, with the schema's field and words; null
 * when the body is valid.
 */
export function checkRegister(body: unknown): MusterError | null {
  if (!isObject(body)) return type('body', 'Object')
  if ('nodeId' in body && body.nodeId !== undefined) {
    if (typeof body.nodeId !== 'string') return type('nodeId', 'string')
    if (!NODE_NAME.test(body.nodeId)) return bad('nodeId', NODE_NAME_MESSAGE)
  }
  if ('version' in body && body.version !== undefined) {
    if (typeof body.version !== 'string') return type('version', 'string')
    if (!VERSION_TEXT.test(body.version)) return bad('version', 'expected X.Y.Z')
  }
  if ('capacity' in body && body.capacity !== undefined) {
    const c = body.capacity
    if (!isObject(c)) return type('capacity', 'Object')
    const e =
      required(c, 'cpuMillis', 'capacity.cpuMillis', (x) => integerIn('capacity.cpuMillis', x, 0, 10_000_000)) ??
      required(c, 'memoryMB', 'capacity.memoryMB', (x) => integerIn('capacity.memoryMB', x, 0, 1_000_000_000))
    if (e) return e
  }
  if ('replicas' in body && body.replicas !== undefined) {
    const rs = body.replicas
    if (!Array.isArray(rs)) return type('replicas', 'Array')
    for (let i = 0; i < rs.length; i++) {
      const e = checkReplica(rs[i], `replicas.${i}`)
      if (e) return e
    }
    if (rs.length > 10_000) return bad('replicas', 'Invalid length: Expected <=10000')
  }
  return null
}

/** What the schema would output: only the known fields (replicas keep their fields in the schema's order). */
function registerOutput(body: Record<string, unknown>): HeartbeatBody {
  const out: HeartbeatBody = {}
  if ('nodeId' in body) out.nodeId = body.nodeId as string | undefined
  if ('version' in body) out.version = body.version as string | undefined
  if ('capacity' in body && body.capacity !== undefined) {
    const c = body.capacity as { cpuMillis: number; memoryMB: number }
    out.capacity = { cpuMillis: c.cpuMillis, memoryMB: c.memoryMB }
  } else if ('capacity' in body) out.capacity = undefined
  if ('replicas' in body && Array.isArray(body.replicas)) {
    out.replicas = (body.replicas as Record<string, unknown>[]).map((r) => {
      const o: Record<string, unknown> = { project: r.project, replica: r.replica, state: r.state }
      if ('exitCode' in r) o.exitCode = r.exitCode
      if ('revision' in r) o.revision = r.revision
      return o as unknown as ReplicaStatus
    })
  } else if ('replicas' in body) out.replicas = undefined
  return out
}

// What the framework sends with an object it serialises.
const JSON_HEADERS = { 'content-type': 'application/json;charset=utf-8' }

function refusal(e: unknown): Response {
  if (e instanceof MusterError) {
    const retryAfter = e.detail?.retryAfterSeconds
    return errorResponse(e, typeof retryAfter === 'number' ? { 'retry-after': String(Math.max(1, Math.ceil(retryAfter))) } : undefined)
  }
  log.error(`unhandled error: ${(e as Error)?.stack ?? String(e)}`)
  return errorResponse(new MusterError('internal', 'Internal error; see the Platform log.'))
}

const HOST_NAME = /^[A-Za-z0-9-]{1,63}(\.[A-Za-z0-9-]{1,63})*$/
const LAST_LABEL_IS_NAME = /(^|\.)[A-Za-z][A-Za-z0-9-]*$/
const IPV4 = /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/

/**
 * A Host every URL parser takes: a name whose last label starts with a letter, or a
 * dotted-quad IPv4, with an optional port up to 65535. Anything else gets the full check.
 */
export function plainHost(host: string | null): boolean {
  if (host === null || host.length > 261) return false
  const colon = host.indexOf(':')
  const name = colon < 0 ? host : host.slice(0, colon)
  if (colon >= 0) {
    const port = host.slice(colon + 1)
    if (!/^\d{1,5}$/.test(port) || Number(port) > 65535) return false
  }
  return (HOST_NAME.test(name) && LAST_LABEL_IS_NAME.test(name)) || IPV4.test(name)
}

const PARSE = () => new MusterError('invalid-request', 'Invalid body: not parseable as JSON or form data.', { field: 'body' })

/** Bun.serve routes for the heartbeat; `fallback` is the server's ordinary fetch handler. */
export function heartbeatRoutes(platform: Services, fallback: (req: Request, server: Bun.Server<unknown>) => Response | Promise<Response>) {
  const fabric = platform.fabric
  const register = async (req: Request, server: Bun.Server<unknown>): Promise<Response> => {
    const authorization = req.headers.get('authorization')
    const contentType = req.headers.get('content-type')
    // The framework's parser takes a body as JSON when the type's 13th character is 'j' (application/json…).
    if (authorization === null || contentType === null || contentType.charCodeAt(12) !== 106 || req.body === null) return fallback(req, server)
    const malformed = plainHost(req.headers.get('host')) ? null : malformedRequest(req)
    if (malformed) return errorResponse(malformed)
    // A join token as the bearer is refused before anything else reads it, as on every other route (src/http/app.ts).
    if (!authorization.startsWith('Bearer mnc_')) {
      const joinToken = joinTokenAsBearer(req)
      if (joinToken) return errorResponse(joinToken)
    }
    let raw: unknown
    try {
      raw = await req.json()
    } catch {
      return errorResponse(PARSE())
    }
    const invalid = checkRegister(raw ?? {})
    if (invalid) return errorResponse(invalid)
    const body = registerOutput((raw ?? {}) as Record<string, unknown>)
    const limit = fabric.limits.heartbeat
    try {
      limit.enter()
    } catch (e) {
      return refusal(e)
    }
    try {
      let n = currentNode(fabric, authorization, body.nodeId)
      if (n) hotPathStats.fast++
      else n = await fabric.nodeForHeartbeat(req.headers, body.nodeId)
      return new Response(JSON.stringify(acceptHeartbeat(fabric, n, body)), { headers: JSON_HEADERS })
    } catch (e) {
      return refusal(e)
    } finally {
      limit.leave()
    }
  }
  return { '/api/v1/nodes/register': { POST: register } }
}
