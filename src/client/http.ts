// The SDK's transport: JSON over fetch, errors raised as MusterError with the
// code the Platform sent; an unreachable Platform is one clear error.
import { MusterError, isCode } from '../errors.ts'
import { explainNetworkError } from './net-errors.ts'

export interface ClientOptions {
  url: string
  token?: string
  /** Extra headers (e.g. a session cookie). */
  headers?: Record<string, string>
  /** Replace fetch (pinned TLS for the node side). */
  fetch?: (url: string, init: RequestInit) => Promise<Response>
}

export type Transport = <T>(method: string, path: string, body?: unknown) => Promise<T>

export function createTransport(opts: ClientOptions): Transport {
  const base = opts.url.replace(/\/+$/, '')
  const doFetch = opts.fetch ?? ((u: string, i: RequestInit) => fetch(u, i))
  return async <T>(method: string, path: string, body?: unknown): Promise<T> => {
    const headers: Record<string, string> = { accept: 'application/json', ...opts.headers }
    if (opts.token) headers.authorization = `Bearer ${opts.token}`
    // Bytes (a release's binary, in parts) travel as they are; anything else as JSON.
    const raw = body instanceof Uint8Array
    if (body !== undefined) headers['content-type'] = raw ? 'application/octet-stream' : 'application/json'
    let res: Response
    try {
      res = await doFetch(base + path, { method, headers, body: body === undefined ? undefined : raw ? (body as Uint8Array<ArrayBuffer>) : JSON.stringify(body), redirect: 'manual' })
    } catch (e) {
      if (e instanceof MusterError) throw e
      throw new MusterError('platform-unreachable', `Cannot reach the Platform at ${base}: ${describeNetworkError(base + path, e)}`)
    }
    const text = await res.text()
    let json: unknown
    try {
      json = text ? JSON.parse(text) : undefined
    } catch {
      json = undefined
    }
    if (res.status >= 300) throw errorFromResponse(res, json, base)
    return json as T
  }
}

function errorFromResponse(res: Response, json: unknown, base: string): MusterError {
  const err = (json as { error?: { code?: string; message?: string; detail?: Record<string, unknown> } } | undefined)?.error
  const detail: Record<string, unknown> = { ...err?.detail, status: res.status }
  const retryAfter = res.headers.get('retry-after')
  if (retryAfter) detail.retryAfterSeconds = Number(retryAfter)
  if (err?.code && isCode(err.code)) return new MusterError(err.code, err.message ?? err.code, detail)
  if (res.status >= 300 && res.status < 400) return new MusterError('forbidden', `The Platform at ${base} answered with a redirect (${res.status}); redirects are never followed.`, detail)
  return new MusterError(res.status === 404 ? 'not-found' : 'internal', `The Platform at ${base} answered ${res.status} ${res.statusText}${err?.message ? `: ${err.message}` : ''}`, detail)
}

function describeNetworkError(url: string, e: unknown): string {
  return explainNetworkError(url, e).text
}
