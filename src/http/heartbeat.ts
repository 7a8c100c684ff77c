// The heartbeat's own route, ahead of the framework: Bun's router
// sends `POST /api/v1/nodes/register` here; every other request, and any
// heartbeat whose shape is not the ordinary one (no credential, a body that is
// not JSON), goes to the framework, whose route answers as it always has.
// What this route answers is byte for byte what the framework route answers
// (test/http/heartbeat-route.test.ts compares the two for every shape).
//
// Why it is cheap: an Agent sends the same body beat after beat, so
// a body's text, once the valibot Register schema (the one set of rules, shared
// with the framework route) has accepted it, maps to its parsed output; the
// next beat with that text skips JSON.parse and the schema. The answer is
// written as text from parts, the tail of which is cached per (assignment
// revision, Platforms list): src/fabric/heartbeat.ts.
import * as v from 'valibot'
import { MusterError } from '../errors.ts'
import { acceptHeartbeatText, currentNode } from '../fabric/heartbeat.ts'
import { log } from '../log.ts'
import { codeOf, type PlatformMetrics } from '../metrics/platform.ts'
import type { Services } from './services.ts'
import { errorResponse } from './app.ts'
import { joinTokenAsBearer, malformedRequest } from './request.ts'
import { type HeartbeatBody, Register } from '../wire/nodes.ts'
import { invalid } from '../wire/validate.ts'

/** How many heartbeats took the allocation-free credential check, and how many bodies the cache answered (tests read them). */
export const hotPathStats = { fast: 0, cachedBodies: 0 }

/**
 * Bodies the schema accepted, by their exact text, with the schema's output
 * (frozen: many nodes share one). Filled only by authenticated heartbeats;
 * the oldest entry leaves when it is full.
 */
export class BodyCache {
  private readonly map = new Map<string, HeartbeatBody>()
  constructor(readonly max = 4096) {}

  get(text: string): HeartbeatBody | undefined {
    return this.map.get(text)
  }

  set(text: string, body: HeartbeatBody): void {
    if (this.map.size >= this.max) this.map.delete(this.map.keys().next().value!)
    this.map.set(text, deepFreeze(body))
  }

  get size(): number {
    return this.map.size
  }
}

function deepFreeze<T>(x: T): T {
  if (typeof x === 'object' && x !== null && !Object.isFrozen(x)) {
    for (const k of Object.keys(x)) deepFreeze((x as Record<string, unknown>)[k])
    Object.freeze(x)
  }
  return x
}

/** The body as the framework route reads it: JSON (a parse error is 400 body), then the Register schema. */
export function parseRegister(text: string): { body: HeartbeatBody } | { error: MusterError } {
  let raw: unknown
  try {
    raw = JSON.parse(text)
  } catch {
    return { error: PARSE() }
  }
  const r = v.safeParse(Register, raw ?? {})
  return r.success ? { body: r.output as HeartbeatBody } : { error: invalid(r.issues[0]) }
}

// What the framework sends with an object it serialises. One Headers for every answer: a Response copies
// it (measured: 300 ns an answer against 530 ns from a plain object, which it must read into new Headers).
const ANSWER = { headers: new Headers({ 'content-type': 'application/json;charset=utf-8' }) }

function refusal(metrics: PlatformMetrics, e: unknown): Response {
  metrics.heartbeatRefusals.inc({ code: codeOf(e) })
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

/** Hosts plainHost took (nodes name a Platform by one or two): a set look-up instead of four patterns. */
const plainHosts = new Set<string>()
function knownPlainHost(host: string | null): boolean {
  if (host !== null && plainHosts.has(host)) return true
  if (!plainHost(host)) return false
  if (plainHosts.size >= 64) plainHosts.clear()
  plainHosts.add(host!)
  return true
}

const PARSE = () => new MusterError('invalid-request', 'Invalid body: not parseable as JSON or form data.', { field: 'body' })

/**
 * Bun.serve routes for the heartbeat; `fallback` is the server's ordinary fetch handler. `done`, when given,
 * is called once each request is answered (the engine's request gate counted it in: src/swap/gate.ts).
 */
export function heartbeatRoutes(platform: Services, fallback: (req: Request, server: Bun.Server<unknown>) => Response | Promise<Response>, done?: () => void) {
  const fabric = platform.fabric
  const bodies = new BodyCache()
  const register = async (req: Request, server: Bun.Server<unknown>): Promise<Response> => {
    // The whole answer inside one try: `done` runs once it is made, on every path (a fallback counts itself).
    try {
      const headers = req.headers
      const authorization = headers.get('authorization')
      const contentType = headers.get('content-type')
      // The framework's parser takes a body as JSON when the type's 13th character is 'j' (application/json…).
      if (authorization === null || contentType === null || contentType.charCodeAt(12) !== 106) return fallback(req, server)
      // A request without a body goes to the framework too. Asking req.body makes a stream (measured ~0.3 µs):
      // only when no Content-Length says there is one.
      const length = headers.get('content-length')
      if ((length === null || length === '0') && req.body === null) return fallback(req, server)
      const malformed = knownPlainHost(headers.get('host')) ? null : malformedRequest(req)
      if (malformed) return errorResponse(malformed)
      // A join token as the bearer is refused before anything else reads it, as on every other route (src/http/app.ts).
      if (!authorization.startsWith('Bearer mnc_')) {
        const joinToken = joinTokenAsBearer(req)
        if (joinToken) return errorResponse(joinToken)
      }
      const text = await req.text()
      let body = bodies.get(text)
      const cached = body !== undefined
      if (body === undefined) {
        const parsed = parseRegister(text)
        if ('error' in parsed) return errorResponse(parsed.error)
        body = parsed.body
      }
      const limit = fabric.limits.heartbeat
      try {
        limit.enter()
      } catch (e) {
        return refusal(fabric.ctx.metrics, e)
      }
      try {
        let n = currentNode(fabric, authorization, body.nodeId)
        if (n) hotPathStats.fast++
        else n = await fabric.nodeForHeartbeat(headers, body.nodeId)
        if (cached) hotPathStats.cachedBodies++
        else bodies.set(text, body)
        return new Response(acceptHeartbeatText(fabric, n, body), ANSWER)
      } catch (e) {
        return refusal(fabric.ctx.metrics, e)
      } finally {
        limit.leave()
      }
    } finally {
      done?.()
    }
  }
  return { '/api/v1/nodes/register': { POST: register } }
}

/** The door of the engine's request gate the heartbeat takes (src/swap/gate.ts). */
interface HeartbeatGate {
  enter(): boolean
  readonly leave: () => void
  handle<S>(req: Request, local: (req: Request, server: S) => Promise<Response> | Response, server?: S): Promise<Response> | Response
}

/**
 * heartbeatRoutes behind the request gate, so an engine swap holds and forwards heartbeats too: the route
 * counts itself in (gate.enter) and out (gate.leave) instead of the gate's promise callback.
 */
export function gatedHeartbeatRoutes(platform: Services, fallback: (req: Request, server: Bun.Server<unknown>) => Response | Promise<Response>, gate: HeartbeatGate) {
  const register = heartbeatRoutes(platform, fallback, gate.leave)['/api/v1/nodes/register'].POST
  return { '/api/v1/nodes/register': { POST: (req: Request, server: Bun.Server<unknown>) => (gate.enter() ? register(req, server) : gate.handle(req, register, server)) } }
}
