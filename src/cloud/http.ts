// How provider clients call their APIs: one fetch with a timeout and no
// redirects, sent again while the provider throttles (by its error code and
// status, waiting as long as its reset headers say; src/cloud/retry.ts), and
// the provider's refusals turned into muster's error codes. Messages carry the
// provider's status and its own words, never a credential.
import { MusterError } from '../errors.ts'
import { backoffMs, classify, DEFAULT_RETRY, ruleFor, type ApiName, type RetryPolicy, type Verdict } from './retry.ts'
import type { ProviderName } from '../wire/cloud.ts'
import { providerCalls, providerRetries } from '../metrics/platform.ts'

export interface ApiAnswer {
  status: number
  headers: Headers
  text: string
}

export type { ApiName }

export interface SendOptions {
  /**
   * Safe to send again when the first send may have been acted on: reads,
   * PUT/DELETE, and creates the provider de-duplicates (EC2 ClientToken, GCP
   * requestId). Anything else is sent again only when the provider said it
   * did not act (throttled); the provisioner looks before it creates again.
   */
  idempotent: boolean
  /** The provider's error code in a refusal's body. */
  code?: (a: ApiAnswer) => string | undefined
  policy?: RetryPolicy
  api?: ApiName
}

const TIMEOUT_MS = 30_000

function networkError(provider: ProviderName, url: string, e: unknown): MusterError {
  const err = e as { code?: string; name?: string; message?: string }
  const why = err.name === 'TimeoutError' ? `no answer within ${TIMEOUT_MS / 1000}s` : (err.code ?? err.message ?? 'network error')
  return new MusterError('cloud-provider-error', `Cannot reach the ${provider} API at ${new URL(url).origin}: ${why}.`, { network: true, retryable: true })
}

async function sendOnce(provider: ProviderName, url: string, init: RequestInit): Promise<ApiAnswer> {
  let res: Response
  try {
    res = await fetch(url, { ...init, redirect: 'manual', signal: AbortSignal.timeout(TIMEOUT_MS) })
    return { status: res.status, headers: res.headers, text: await res.text() }
  } catch (e) {
    throw networkError(provider, url, e)
  }
}

/**
 * Sends a request, again while the answer says to (see retry.ts), within the
 * policy's attempts and waiting budget. Answers the last answer and what it
 * meant; a network failure on the last send throws (retryable).
 */
export async function send(provider: ProviderName, url: string, init: RequestInit, o: SendOptions): Promise<ApiAnswer & { verdict: Verdict | null }> {
  const policy = o.policy ?? DEFAULT_RETRY
  let waited = 0
  for (let attempt = 0; ; attempt++) {
    const last = attempt + 1 >= policy.attempts
    let a: ApiAnswer
    try {
      a = await sendOnce(provider, url, init)
    } catch (e) {
      providerCalls.inc({ provider, outcome: 'network' })
      const wait = backoffMs(policy, attempt)
      if (!o.idempotent || last || waited + wait > policy.maxWaitMs) throw e
      providerRetries.inc({ provider })
      waited += wait
      await policy.sleep(wait)
      continue
    }
    const verdict = a.status < 300 ? null : classify(o.api ?? provider, a.status, a.headers, o.code?.(a))
    providerCalls.inc({ provider, outcome: a.status < 300 ? 'ok' : (verdict?.kind ?? 'refused') })
    if (a.status < 300) return { ...a, verdict: null }
    if (!verdict || last || (verdict.kind === 'transient' && !o.idempotent)) return { ...a, verdict }
    const wait = verdict.waitMs ?? backoffMs(policy, attempt)
    if (waited + wait > policy.maxWaitMs) return { ...a, verdict }
    providerRetries.inc({ provider })
    waited += wait
    // A reset header names a second; a few ms past it, the window has surely turned.
    await policy.sleep(verdict.waitMs === null ? wait : wait + 50)
  }
}

/** One request with no retries (identity endpoints build their own refusals). */
export function request(provider: ProviderName, url: string, init: RequestInit): Promise<ApiAnswer> {
  return sendOnce(provider, url, init)
}

export function parseJson<T>(provider: ProviderName, a: ApiAnswer): T {
  try {
    return (a.text ? JSON.parse(a.text) : {}) as T
  } catch {
    throw new MusterError('cloud-provider-error', `The ${provider} API answered ${a.status} with a body that is not JSON.`)
  }
}

/**
 * A provider's refusal, by its code first (retry.ts's tables): throttled past
 * our waiting budget is `cloud-throttled`; bad credentials are
 * `cloud-credentials-refused`; a missing permission, a region not enabled, a
 * quota or a capacity shortage is `cloud-refused`, naming what to fix;
 * anything else is the provider's error (`retryable` when it was transient).
 */
export function refusal(provider: ProviderName, status: number, code: string | undefined, message: string | undefined, verdict: Verdict | null = null, api: ApiName = provider): MusterError {
  const words = [code, message].filter(Boolean).join(': ').slice(0, 500)
  const said = `${status}${words ? ` ${words}` : ''}`
  const detail = { providerStatus: status, providerCode: code ?? null, retryable: verdict !== null }
  if (verdict?.kind === 'throttled') {
    const after = verdict.waitMs === null ? '' : `; it asks to wait ${Math.ceil(verdict.waitMs / 1000)}s`
    return new MusterError('cloud-throttled', `${provider} is throttling requests (${said})${after}. Try again shortly.`, { ...detail, retryAfterMs: verdict.waitMs })
  }
  const rule = ruleFor(api, status, code)
  const fix = rule.fix ? ` To fix: ${rule.fix}.` : ''
  if (rule.kind === 'credentials') return new MusterError('cloud-credentials-refused', `${provider} refused the credentials (${said}).${fix}`, detail)
  if (rule.kind === 'permission') return new MusterError('cloud-refused', `${provider} refused: the credentials lack a permission (${said}).${fix || ' To fix: grant the permissions docs/cloud.md lists for this provider.'}`, detail)
  if (rule.kind === 'refused' && rule.fix) return new MusterError('cloud-refused', `${provider} refused (${said}).${fix}`, detail)
  return new MusterError('cloud-provider-error', `${provider} answered ${said}.`, detail)
}

function bodyOf(a: ApiAnswer): unknown {
  try {
    return a.text ? JSON.parse(a.text) : undefined
  } catch {
    return undefined
  }
}

/** JSON APIs: the answer's body when 2xx, else the refusal `describe` reads out of it. */
export async function callJson<T>(
  provider: ProviderName,
  url: string,
  init: RequestInit,
  describe: (body: unknown) => { code?: string; message?: string },
  o: { idempotent?: boolean; policy?: RetryPolicy; api?: ApiName } = {},
): Promise<{ status: number; body: T; headers: Headers }> {
  const headers = { accept: 'application/json', ...(init.body ? { 'content-type': 'application/json' } : {}), ...init.headers }
  const idempotent = o.idempotent ?? (init.method ?? 'GET') !== 'POST'
  const code = (a: ApiAnswer) => {
    const b = bodyOf(a)
    return b === undefined ? undefined : describe(b).code
  }
  const a = await send(provider, url, { ...init, headers }, { idempotent, code, policy: o.policy, api: o.api })
  if (a.status >= 200 && a.status < 300) return { status: a.status, body: parseJson<T>(provider, a), headers: a.headers }
  const b = bodyOf(a)
  const d = b === undefined ? {} : describe(b)
  throw refusal(provider, a.status, d.code, d.message, a.verdict, o.api)
}

export function isStatus(e: unknown, status: number): boolean {
  return e instanceof MusterError && e.detail?.providerStatus === status
}

export function isCode(e: unknown, ...codes: string[]): boolean {
  return e instanceof MusterError && codes.includes(e.detail?.providerCode as string)
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
