// When a provider's answer is worth sending again, and how long to wait first.
// Throttling is read from each provider's own error code as well as the HTTP
// status, and the provider's reset headers are honoured over our backoff:
// - Hetzner: 429 `rate_limit_exceeded`, `RateLimit-Reset` a UNIX time; also
//   `conflict`, `timeout`, `bad_gateway` and 502/504 (hcloud-go
//   hcloud/client_handler_retry.go retryPolicy, client_handler_rate_limit.go).
// - DigitalOcean: 429 `too_many_requests`, `RateLimit-Reset` a UNIX time
//   (godo godo.go populateRate); 5xx but 501 (go-retryablehttp DefaultRetryPolicy).
// - AWS: the SDK's THROTTLING_ERROR_CODES (RequestLimitExceeded, Throttling, …)
//   whatever the status, and 500/502/503/504 (smithy-typescript
//   packages/service-error-classification/src/constants.ts).
// - GCP: 403 or 429 with reason `rateLimitExceeded`/`userRateLimitExceeded`
//   ("If your project exceeds a rate quota, you receive a 403 error with the
//   reason rateLimitExceeded", https://cloud.google.com/compute/api-quota), and 5xx.
// - Azure: 429 with `Retry-After` seconds (https://learn.microsoft.com/azure/azure-resource-manager/management/request-limits-and-throttling),
//   5xx, and the identity platform's token endpoint answering 429/5xx.
import type { ProviderName } from './provider.ts'

export interface RetryPolicy {
  /** Sends of one request at most. */
  attempts: number
  /** The most time one request may spend waiting between sends; a longer reset is given up on (the caller retries later). */
  maxWaitMs: number
  /** Backoff without a header: baseMs · 2^n (full jitter), at most capMs. */
  baseMs: number
  capMs: number
  sleep(ms: number): Promise<void>
}

export const DEFAULT_RETRY: RetryPolicy = {
  attempts: 8,
  maxWaitMs: Number(process.env.MUSTER_CLOUD_RETRY_MAX_MS) || 60_000,
  baseMs: 500,
  capMs: 20_000,
  sleep: (ms) => Bun.sleep(ms),
}

/** throttled: the provider refused to do it yet (safe to send again); transient: it may or may not have done it. */
export type Verdict = { kind: 'throttled' | 'transient'; waitMs: number | null }

const AWS_THROTTLING = new Set([
  'BandwidthLimitExceeded',
  'EC2ThrottledException',
  'LimitExceededException',
  'PriorRequestNotComplete',
  'ProvisionedThroughputExceededException',
  'RequestLimitExceeded',
  'RequestThrottled',
  'RequestThrottledException',
  'SlowDown',
  'ThrottledException',
  'Throttling',
  'ThrottlingException',
  'TooManyRequestsException',
  'TransactionInProgressException',
])
const AWS_TRANSIENT = new Set(['TimeoutError', 'RequestTimeout', 'RequestTimeoutException', 'InternalError', 'Unavailable', 'ServiceUnavailable'])
const GCP_THROTTLING = new Set(['rateLimitExceeded', 'userRateLimitExceeded', 'RESOURCE_EXHAUSTED'])
const HETZNER_TRANSIENT = new Set(['conflict', 'timeout', 'bad_gateway'])
const TRANSIENT_STATUS = new Set([500, 502, 503, 504])

/** Retry-After (delta seconds or an HTTP date), else a RateLimit-Reset UNIX time (Hetzner, DigitalOcean). */
export function headerWaitMs(headers: Headers, now = Date.now()): number | null {
  const after = headers.get('retry-after')?.trim()
  if (after) {
    if (/^\d+$/.test(after)) return Number(after) * 1000
    const at = Date.parse(after)
    if (Number.isFinite(at)) return Math.max(at - now, 0)
  }
  const reset = headers.get('ratelimit-reset')?.trim()
  if (reset && /^\d+$/.test(reset)) {
    const n = Number(reset)
    // A UNIX time for Hetzner and DigitalOcean; a small number is the IETF draft's delta seconds.
    return n > 1_000_000_000 ? Math.max(n * 1000 - now, 0) : n * 1000
  }
  return null
}

/** What the provider's answer means for a retry; null when it is final. */
export function classify(provider: ProviderName | 'azure-login' | 'aws-sts', status: number, headers: Headers, code: string | undefined): Verdict | null {
  const waitMs = headerWaitMs(headers)
  const throttled = (): Verdict => ({ kind: 'throttled', waitMs })
  const transient = (): Verdict => ({ kind: 'transient', waitMs })
  if (status === 429) return throttled()
  switch (provider) {
    case 'hetzner':
      if (code === 'rate_limit_exceeded') return throttled()
      if (code && HETZNER_TRANSIENT.has(code)) return transient()
      return status === 502 || status === 504 ? transient() : null
    case 'aws':
    case 'aws-sts':
      if (code && AWS_THROTTLING.has(code)) return throttled()
      if ((code && AWS_TRANSIENT.has(code)) || TRANSIENT_STATUS.has(status)) return transient()
      return null
    case 'gcp':
      if (code && GCP_THROTTLING.has(code) && (status === 403 || status === 429)) return throttled()
      return TRANSIENT_STATUS.has(status) ? transient() : null
    case 'digitalocean':
    case 'azure':
    case 'azure-login':
      return status >= 500 && status !== 501 ? transient() : null
  }
}

/** Full-jitter exponential backoff (never zero, so a busy provider is not hammered). */
export function backoffMs(policy: RetryPolicy, attempt: number): number {
  const ceiling = Math.min(policy.capMs, policy.baseMs * 2 ** attempt)
  return Math.max(Math.round(ceiling / 2 + (Math.random() * ceiling) / 2), 1)
}
