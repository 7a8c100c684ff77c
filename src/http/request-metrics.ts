// API requests counted by method, route template and status class, and
// timed until their answer is ready (docs/monitoring.md). The framework names
// the matched route's template (`/api/v1/nodes/:name/revoke`, never the raw
// path); a request that matched none counts as `unmatched`. The heartbeat's
// own route (src/http/heartbeat.ts) is not counted here: it increments
// muster_heartbeats_total and nothing else.
import { httpDuration, httpRequests } from '../metrics/platform.ts'

const templates = new WeakMap<Request, string>()
const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'])

const ids = new WeakMap<Request, string>()
const idBase = `${process.pid.toString(36)}${Date.now().toString(36).slice(-4)}`
let nextId = 0

/** A request's id for the log lines about it (made on first ask: most requests are never logged). */
export function requestId(request: Request): string {
  let id = ids.get(request)
  if (id === undefined) {
    id = `${idBase}-${(++nextId).toString(36)}`
    ids.set(request, id)
  }
  return id
}

/** The framework matched `request` to the route `template` (app.ts calls this). */
export function noteRoute(request: Request, template: string | undefined): void {
  if (template) templates.set(request, template)
}

export function countRequests(handle: (r: Request) => Promise<Response>): (r: Request) => Promise<Response> {
  return async (request) => {
    const started = performance.now()
    let status = 500
    try {
      const res = await handle(request)
      status = res.status
      return res
    } finally {
      const method = METHODS.has(request.method) ? request.method : 'other'
      const route = templates.get(request) ?? 'unmatched'
      httpRequests.inc({ method, route, code: `${Math.floor(status / 100)}xx` })
      httpDuration.observe({ method, route }, (performance.now() - started) / 1000)
    }
  }
}
