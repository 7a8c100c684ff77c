// How provider clients call their APIs: one fetch with a timeout and no
// redirects, and the provider's refusals turned into muster's error codes.
// Messages carry the provider's status and its own words, never a credential.
import { MusterError } from '../errors.ts'
import type { ProviderName } from './provider.ts'

export interface ApiAnswer {
  status: number
  headers: Headers
  text: string
}

const TIMEOUT_MS = 30_000

export async function request(provider: ProviderName, url: string, init: RequestInit): Promise<ApiAnswer> {
  let res: Response
  try {
    res = await fetch(url, { ...init, redirect: 'manual', signal: AbortSignal.timeout(TIMEOUT_MS) })
  } catch (e) {
    const err = e as { code?: string; name?: string; message?: string }
    const why = err.name === 'TimeoutError' ? `no answer within ${TIMEOUT_MS / 1000}s` : (err.code ?? err.message ?? 'network error')
    throw new MusterError('cloud-provider-error', `Cannot reach the ${provider} API at ${new URL(url).origin}: ${why}.`)
  }
  return { status: res.status, headers: res.headers, text: await res.text() }
}

export function parseJson<T>(provider: ProviderName, a: ApiAnswer): T {
  try {
    return (a.text ? JSON.parse(a.text) : {}) as T
  } catch {
    throw new MusterError('cloud-provider-error', `The ${provider} API answered ${a.status} with a body that is not JSON.`)
  }
}

/** A provider's refusal: 401/403 mean the credentials; anything else is the provider's error. */
export function refusal(provider: ProviderName, status: number, code: string | undefined, message: string | undefined): MusterError {
  const words = [code, message].filter(Boolean).join(': ').slice(0, 500)
  if (status === 401 || status === 403) {
    return new MusterError('cloud-credentials-refused', `${provider} refused the credentials (${status}${words ? ` ${words}` : ''}).`, { providerStatus: status, providerCode: code ?? null })
  }
  return new MusterError('cloud-provider-error', `${provider} answered ${status}${words ? ` ${words}` : ''}.`, { providerStatus: status, providerCode: code ?? null })
}

/** JSON APIs: the answer's body when 2xx, else the refusal `describe` reads out of it. */
export async function callJson<T>(
  provider: ProviderName,
  url: string,
  init: RequestInit,
  describe: (body: unknown) => { code?: string; message?: string },
): Promise<{ status: number; body: T; headers: Headers }> {
  const a = await request(provider, url, { ...init, headers: { accept: 'application/json', ...(init.body ? { 'content-type': 'application/json' } : {}), ...init.headers } })
  if (a.status >= 200 && a.status < 300) return { status: a.status, body: parseJson<T>(provider, a), headers: a.headers }
  let body: unknown
  try {
    body = a.text ? JSON.parse(a.text) : undefined
  } catch {
    body = undefined
  }
  const d = body === undefined ? {} : describe(body)
  throw refusal(provider, a.status, d.code, d.message)
}

export function isStatus(e: unknown, status: number): boolean {
  return e instanceof MusterError && e.detail?.providerStatus === status
}

/** The answer, or null when the provider says the thing does not exist (404). */
export async function unless404<T>(call: Promise<T>): Promise<T | null> {
  try {
    return await call
  } catch (e) {
    if (isStatus(e, 404)) return null
    throw e
  }
}
