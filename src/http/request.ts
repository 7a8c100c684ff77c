// What the Platform reads from a request's line and headers before any route
// runs, written so that no shape of input can throw: a request without a
// usable Host, an Origin that is not a URL, a content type of any spelling.
// Both ports (the API and the enrollment listener) use these.
import { MusterError } from '../errors.ts'

/**
 * Refuses a request whose URL the runtime could not make absolute: HTTP/1.0
 * without Host, or a Host that is not a host (`a b`, `[`). docs/security.md: 4xx.
 */
export function malformedRequest(request: Request): MusterError | null {
  if (/^https?:\/\//.test(request.url) && URL.canParse(request.url)) return null
  return new MusterError('invalid-request', 'Missing or malformed Host header.', { field: 'host' })
}

/** Whether a request is for `path` as the router sees it (which also routes `path/` there). */
export function isPath(request: Request, path: string): boolean {
  const p = requestPath(request)
  return p === path || p === `${path}/`
}

/** The path of a request (no query), whatever its URL looks like. */
export function requestPath(request: Request): string {
  const url = request.url
  const scheme = url.indexOf('://')
  const start = scheme >= 0 ? url.indexOf('/', scheme + 3) : url.indexOf('/')
  if (start < 0) return '/'
  const end = url.slice(start).search(/[?#]/)
  return end < 0 ? url.slice(start) : url.slice(start, start + end)
}

/**
 * The host of an Origin header: null when absent; 'opaque' for `null` and
 * for anything that is not an http(s) origin (a malformed Origin is treated as
 * a foreign one, never parsed twice).
 */
export function originHost(request: Request): string | null | 'opaque' {
  const origin = request.headers.get('origin')
  if (origin === null) return null
  if (!/^https?:\/\/[^/?#\s]+\/?$/i.test(origin) || !URL.canParse(origin)) return 'opaque'
  return new URL(origin).host
}

/**
 * Whether a request may have come from a page of this Platform: it sends no
 * Origin (not a browser's cross-site request), or one naming this host.
 */
export function sameOrigin(request: Request, publicHost: string | undefined): boolean {
  const host = originHost(request)
  if (host === null) return true
  if (host === 'opaque') return false
  return host === request.headers.get('host')?.toLowerCase() || host === publicHost
}

/** The media type of a Content-Type header, lower-case, without parameters ('' when absent). */
export function mediaType(request: Request): string {
  return (request.headers.get('content-type') ?? '').split(';')[0]!.trim().toLowerCase()
}

/** JSON is what a page elsewhere cannot send without asking first (a CORS preflight muster never grants). */
export const isJson = (request: Request) => mediaType(request) === 'application/json'

/**
 * A join token (mjt_…) is spent only by enroll, in its body. Presented as a
 * bearer anywhere else, on either port, it is refused outright (docs/nodes.md),
 * before any route could read it as some other credential.
 */
export function joinTokenAsBearer(request: Request): MusterError | null {
  const bearer = request.headers.get('authorization')?.match(/^Bearer\s+(\S+)$/i)?.[1] ?? ''
  if (!/^mjt_/i.test(bearer) || isPath(request, '/api/v1/nodes/enroll')) return null
  return new MusterError('forbidden', 'A join token is not a credential: it is accepted only by enroll (POST /api/v1/nodes/enroll, in the body).')
}
