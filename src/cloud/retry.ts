// What a provider's refusal means, by its error code first and its HTTP status
// second, and how long to wait before sending again. Each provider's table
// follows its official SDK's retry strategy, and names what to fix for a
// refusal that will not pass by itself:
// - AWS: smithy-typescript packages/service-error-classification/src/constants.ts
//   (THROTTLING_ERROR_CODES whatever the status; TRANSIENT_ERROR_CODES and 500/502/503/504),
//   and the EC2 API's error codes (https://docs.aws.amazon.com/AWSEC2/latest/APIReference/errors-overview.html):
//   UnauthorizedOperation is a missing permission and OptInRequired a region not
//   enabled, neither bad credentials; Insufficient*Capacity and limits are final for a provision.
// - Hetzner: hcloud-go hcloud/error.go and client_handler_retry.go (conflict retried),
//   rate_limit_exceeded with RateLimit-Reset a UNIX time; locked/timeout/bad_gateway/maintenance pass.
// - DigitalOcean: godo (429 too_many_requests, RateLimit-Reset) and go-retryablehttp's
//   DefaultRetryPolicy (5xx but 501).
// - GCP: 403 or 429 with reason rateLimitExceeded/userRateLimitExceeded
//   (https://cloud.google.com/compute/api-quota), 5xx; forbidden/accessNotConfigured are permissions.
// - Azure: @azure/core-rest-pipeline (throttlingRetryStrategy: 429/503 with retry-after-ms,
//   x-ms-retry-after-ms or Retry-After; exponentialRetryStrategy: 408 and 5xx but 501/505), and
//   ARM's 409 AnotherOperationInProgress / RetryableError, which ask to come back.
import type { ProviderName } from '../wire/cloud.ts'
import type { PlatformMetrics } from '../metrics/platform.ts'
import { tunableNumber } from '../tunables.ts'

export interface RetryPolicy {
  /** Sends of one request at most. */
  attempts: number
  /** The most time one request may spend waiting between sends; a longer reset is given up on (the caller retries later). */
  maxWaitMs: number
  /** Backoff without a header: baseMs · 2^n (full jitter), at most capMs. */
  baseMs: number
  capMs: number
  sleep(ms: number): Promise<void>
  /** Where the sends are counted (the Platform's families; none: uncounted). */
  metrics?: Pick<PlatformMetrics, 'providerCalls' | 'providerRetries'>
}

export const DEFAULT_RETRY: RetryPolicy = {
  attempts: 8,
  maxWaitMs: tunableNumber('MUSTER_CLOUD_RETRY_MAX_MS'),
  baseMs: 500,
  capMs: 20_000,
  sleep: (ms) => Bun.sleep(ms),
}

/** throttled: the provider refused to do it yet (safe to send again); transient: it may or may not have done it. */
export type Verdict = { kind: 'throttled' | 'transient'; waitMs: number | null }

/**
 * What a refusal is: worth another send (throttled, transient), or final —
 * the credentials, a missing permission, or anything else the operator has to fix.
 */
export type Kind = 'throttled' | 'transient' | 'credentials' | 'permission' | 'refused'
export interface Rule {
  kind: Kind
  /** What to do about it, in a few words. */
  fix?: string
}

export type ApiName = ProviderName | 'azure-login' | 'aws-sts'

const rules = (kind: Kind, codes: string[], fix?: string): [string, Rule][] => codes.map((c) => [c, { kind, ...(fix ? { fix } : {}) }])

const AWS_PERMISSIONS = 'give the credentials the EC2 permissions in docs/cloud.md (ec2:RunInstances, ec2:Describe*, ec2:CreateSecurityGroup, …)'
const AWS = new Map<string, Rule>([
  ...rules('throttled', ['BandwidthLimitExceeded', 'EC2ThrottledException', 'LimitExceededException', 'PriorRequestNotComplete', 'ProvisionedThroughputExceededException', 'RequestLimitExceeded', 'RequestThrottled', 'RequestThrottledException', 'SlowDown', 'ThrottledException', 'Throttling', 'ThrottlingException', 'TooManyRequestsException', 'TransactionInProgressException']),
  ...rules('transient', ['TimeoutError', 'RequestTimeout', 'RequestTimeoutException', 'InternalError', 'InternalFailure', 'Unavailable', 'ServiceUnavailable', 'IDPCommunicationError']),
  ...rules('credentials', ['AuthFailure', 'SignatureDoesNotMatch', 'InvalidClientTokenId', 'UnrecognizedClientException', 'IncompleteSignature', 'MissingAuthenticationToken', 'ExpiredToken', 'InvalidAccessKeyId'], 'check the access key and secret (or the ambient credentials)'),
  ...rules('refused', ['RequestExpired', 'RequestInTheFuture', 'RequestTimeTooSkewed'], "the Platform's clock is off by more than 5 minutes: synchronise it (timedatectl set-ntp true)"),
  ...rules('permission', ['UnauthorizedOperation'], AWS_PERMISSIONS),
  ...rules('permission', ['AccessDenied'], "the role's trust policy must let these credentials call sts:AssumeRole (with this external id)"),
  ...rules('refused', ['OptInRequired'], 'the account is not signed up for this: finish the AWS sign-up, or enable the region (AWS console → Account → AWS Regions) or pick another'),
  ...rules('refused', ['PendingVerification', 'Blocked'], 'the AWS account is not ready to launch instances: see the AWS console'),
  ...rules('refused', ['InsufficientInstanceCapacity', 'InsufficientCapacity', 'InsufficientHostCapacity'], 'AWS has no capacity for this size here now: pick another size or region, or try later'),
  ...rules('refused', ['InsufficientAddressCapacity', 'AddressLimitExceeded'], 'no public IPv4 address is available: try another region'),
  ...rules('refused', ['InstanceLimitExceeded', 'VcpuLimitExceeded', 'MaxSpotInstanceCountExceeded'], 'the account’s instance (vCPU) quota is reached: release machines or request more (Service Quotas → EC2)'),
  ...rules('refused', ['VPCIdNotSpecified', 'InvalidVpcID.NotFound'], 'the region has no default VPC: create one (aws ec2 create-default-vpc)'),
  ...rules('refused', ['Unsupported'], 'this size is not offered where EC2 placed it: pick another size'),
  ...rules('refused', ['InvalidParameterValue', 'InvalidParameter', 'InvalidParameterCombination', 'MissingParameter', 'UnknownParameter', 'InvalidAMIID.NotFound', 'InvalidAMIID.Malformed', 'InvalidAMIID.Unavailable', 'InvalidInstanceType', 'IdempotentParameterMismatch']),
])

const HETZNER = new Map<string, Rule>([
  ...rules('throttled', ['rate_limit_exceeded']),
  ...rules('transient', ['conflict', 'timeout', 'bad_gateway', 'locked', 'maintenance', 'robot_unavailable', 'server_error', 'service_error', 'unknown_error']),
  ...rules('credentials', ['unauthorized'], 'check the project API token'),
  ...rules('permission', ['forbidden', 'token_readonly'], 'use a project API token with Read & Write access'),
  ...rules('refused', ['resource_limit_exceeded'], 'the project’s resource limit is reached: release machines or ask Hetzner to raise the limit'),
  ...rules('refused', ['resource_unavailable', 'placement_error'], 'Hetzner cannot place this server type in the location now: pick another type or location'),
  ...rules('refused', ['invalid_server_type'], 'the server type is deprecated or does not fit: pick one from `muster cloud sizes`'),
  ...rules('refused', ['invalid_input', 'not_found', 'protected', 'unsupported_error', 'deprecated_api_endpoint', 'json_error']),
])

const DIGITALOCEAN = new Map<string, Rule>([
  ...rules('throttled', ['too_many_requests']),
  ...rules('transient', ['server_error', 'service_unavailable']),
  ...rules('credentials', ['Unauthorized', 'unauthorized'], 'check the personal access token'),
  ...rules('permission', ['forbidden'], 'use a token with read and write scope (droplet, firewall, tag, region, size)'),
  ...rules('refused', ['unprocessable_entity', 'not_found', 'bad_request']),
])

const GCP = new Map<string, Rule>([
  // rateLimitExceeded comes as 403 as well as 429: only a 403/429 with these reasons is throttling
  ...rules('throttled', ['rateLimitExceeded', 'userRateLimitExceeded', 'RESOURCE_EXHAUSTED']),
  ...rules('transient', ['backendError', 'internalError', 'resourceNotReady', 'UNAVAILABLE', 'INTERNAL']),
  ...rules('credentials', ['authError', 'UNAUTHENTICATED', 'invalid_grant', 'unauthorized_client'], 'check the service account key (it may have been deleted or disabled)'),
  ...rules('permission', ['forbidden', 'insufficientPermissions', 'PERMISSION_DENIED'], 'grant the service account roles/compute.instanceAdmin.v1 and roles/compute.securityAdmin on the project'),
  ...rules('permission', ['accessNotConfigured', 'SERVICE_DISABLED'], 'enable the Compute Engine API for the project (gcloud services enable compute.googleapis.com)'),
  ...rules('refused', ['quotaExceeded', 'QUOTA_EXCEEDED'], 'a Compute Engine quota is reached: release machines or raise it (IAM & Admin → Quotas)'),
  ...rules('refused', ['ZONE_RESOURCE_POOL_EXHAUSTED', 'ZONE_RESOURCE_POOL_EXHAUSTED_WITH_DETAILS'], 'the zone has no capacity for this machine type now: pick another zone or type, or try later'),
  ...rules('refused', ['invalid', 'badRequest', 'notFound', 'alreadyExists', 'INVALID_ARGUMENT', 'NOT_FOUND', 'conditionNotMet']),
])

const AZURE = new Map<string, Rule>([
  // ARM asks to come back for these: nothing was done
  ...rules('throttled', ['TooManyRequests', 'RetryableError', 'AnotherOperationInProgress', 'OperationPreempted']),
  ...rules('transient', ['InternalServerError', 'ServerTimeout', 'GatewayTimeout', 'ServiceUnavailable', 'InternalExecutionError']),
  ...rules('credentials', ['InvalidAuthenticationToken', 'AuthenticationFailed', 'ExpiredAuthenticationToken', 'InvalidAuthenticationTokenTenant'], 'check the tenant, client id and secret (or federated token)'),
  ...rules('permission', ['AuthorizationFailed', 'LinkedAuthorizationFailed'], 'give the service principal Contributor on the resource group, and Reader on the subscription for regions and sizes'),
  ...rules('refused', ['MissingSubscriptionRegistration'], 'register the resource providers: az provider register -n Microsoft.Compute; az provider register -n Microsoft.Network'),
  ...rules('refused', ['ResourceGroupNotFound'], 'create the resource group first (az group create)'),
  ...rules('refused', ['SkuNotAvailable'], 'this size is not offered to the subscription in the region: pick one from `muster cloud sizes`'),
  ...rules('refused', ['OperationNotAllowed', 'QuotaExceeded'], 'a vCPU quota is reached: release machines or request more (Subscriptions → Usage + quotas)'),
  ...rules('refused', ['AllocationFailed', 'ZonalAllocationFailed', 'OverconstrainedAllocationRequest'], 'Azure has no capacity for this size in the region now: pick another size or region, or try later'),
  ...rules('refused', ['SubscriptionNotFound', 'InvalidParameter', 'BadRequest', 'PropertyChangeNotAllowed', 'InvalidResourceReference', 'NoRegisteredProviderFound', 'InvalidApiVersionParameter']),
])

const AZURE_LOGIN = new Map<string, Rule>([
  ...rules('transient', ['temporarily_unavailable', 'server_error']),
  ...rules('credentials', ['invalid_client', 'unauthorized_client', 'invalid_request', 'invalid_grant', 'invalid_scope', 'unsupported_grant_type'], 'check the tenant id, client id and secret (or the federated token file)'),
])

const TABLES: Record<ApiName, Map<string, Rule>> = { aws: AWS, 'aws-sts': AWS, hetzner: HETZNER, digitalocean: DIGITALOCEAN, gcp: GCP, azure: AZURE, 'azure-login': AZURE_LOGIN }

/** A refusal's meaning: its code in the provider's table, else what its status says. */
export function ruleFor(api: ApiName, status: number, code: string | undefined): Rule {
  const known = code ? TABLES[api].get(code) : undefined
  // GCP's throttling reasons are throttling only on 403/429 (a 400 with such a reason is not)
  if (known && !(api === 'gcp' && known.kind === 'throttled' && status !== 403 && status !== 429)) return known
  if (status === 429) return { kind: 'throttled' }
  if (api === 'azure' && status === 503) return { kind: 'throttled' }
  if (status === 401) return { kind: 'credentials' }
  if (status === 403) return { kind: 'permission' }
  if (status === 408 || status === 502 || status === 503 || status === 504) return { kind: 'transient' }
  if (status >= 500 && status !== 501 && status !== 505) return { kind: 'transient' }
  return { kind: 'refused' }
}

/** A wait the provider asked for: retry-after-ms / x-ms-retry-after-ms (Azure), Retry-After (seconds or an HTTP date), else a RateLimit-Reset UNIX time (Hetzner, DigitalOcean). */
export function headerWaitMs(headers: Headers, now = Date.now()): number | null {
  for (const name of ['retry-after-ms', 'x-ms-retry-after-ms']) {
    const ms = headers.get(name)?.trim()
    if (ms && /^\d+(\.\d+)?$/.test(ms)) return Math.ceil(Number(ms))
  }
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
export function classify(api: ApiName, status: number, headers: Headers, code: string | undefined): Verdict | null {
  const { kind } = ruleFor(api, status, code)
  if (kind !== 'throttled' && kind !== 'transient') return null
  return { kind, waitMs: headerWaitMs(headers) }
}

/** Full-jitter exponential backoff (never zero, so a busy provider is not hammered). */
export function backoffMs(policy: RetryPolicy, attempt: number): number {
  const ceiling = Math.min(policy.capMs, policy.baseMs * 2 ** attempt)
  return Math.max(Math.round(ceiling / 2 + (Math.random() * ceiling) / 2), 1)
}
