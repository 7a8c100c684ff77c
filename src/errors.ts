// The error contract: every refusal muster makes carries one of these codes.
// Codes are API: append, never rename.
export const CODES = {
  'invalid-request': { status: 400, retryable: false },
  unauthorized: { status: 401, retryable: false },
  forbidden: { status: 403, retryable: false },
  'not-found': { status: 404, retryable: false },
  conflict: { status: 409, retryable: false },
  'payload-too-large': { status: 413, retryable: false },
  'rate-limited': { status: 429, retryable: true },
  internal: { status: 500, retryable: true },
  unavailable: { status: 503, retryable: true },
  // operators and accounts
  'login-refused': { status: 401, retryable: false },
  'local-login-disabled': { status: 403, retryable: false },
  // enrollment authority
  'enrollment-refused': { status: 403, retryable: false },
  'nodes-disabled': { status: 409, retryable: false },
  'worker-newer': { status: 409, retryable: false },
  'node-exists': { status: 409, retryable: false },
  'node-in-use': { status: 409, retryable: false },
  'node-healthy': { status: 409, retryable: false },
  'name-taken': { status: 409, retryable: false },
  'enrollment-pending': { status: 409, retryable: false },
  'certificate-in-use': { status: 409, retryable: false },
  'node-revoked': { status: 403, retryable: false },
  // federation
  'federation-token-revoked': { status: 403, retryable: false },
  'office-exists': { status: 409, retryable: false },
  'office-mismatch': { status: 403, retryable: false },
  'not-a-controller': { status: 409, retryable: false },
  'vouch-malformed': { status: 400, retryable: false },
  'vouch-office-mismatch': { status: 403, retryable: false },
  'vouch-invalid': { status: 403, retryable: false },
  'vouch-not-an-office': { status: 409, retryable: false },
  'vouch-expired': { status: 403, retryable: false },
  'vouch-already-redeemed': { status: 409, retryable: false },
  'vouch-identity-invalid': { status: 400, retryable: false },
  'federation-refused': { status: 403, retryable: false },
  'office-unreachable': { status: 502, retryable: true },
  // host-side and client-side failures (never sent by the Platform over HTTP)
  'platform-unreachable': { status: 503, retryable: true },
  'insecure-permissions': { status: 500, retryable: false },
  'data-dir-newer': { status: 500, retryable: false },
  'already-running': { status: 409, retryable: false },
  'not-configured': { status: 400, retryable: false },
  'store-unavailable': { status: 503, retryable: true },
  'store-sealed': { status: 500, retryable: false },
  // cloud
  'cloud-not-connected': { status: 409, retryable: false },
  'cloud-credentials-refused': { status: 400, retryable: false },
  'cloud-provider-error': { status: 502, retryable: true },
  'cloud-in-use': { status: 409, retryable: false },
  'cloud-unavailable': { status: 503, retryable: false },
  'cloud-throttled': { status: 503, retryable: true },
  'audit-unavailable': { status: 503, retryable: true },
  // a cloud provider refused for a reason that does not pass by itself (a missing permission, a region not
  // enabled, a quota, an input it does not take): the message names what to fix
  'cloud-refused': { status: 400, retryable: false },
  'replica-not-placed': { status: 409, retryable: false },
  'node-unreachable': { status: 409, retryable: true },
} as const

export type Code = keyof typeof CODES

export class MusterError extends Error {
  constructor(
    readonly code: Code,
    message: string,
    readonly detail?: Record<string, unknown>,
  ) {
    super(message)
    this.name = 'MusterError'
  }
  get status(): number {
    return CODES[this.code].status
  }
  get retryable(): boolean {
    return CODES[this.code].retryable
  }
  toJSON() {
    return { error: { code: this.code, message: this.message, ...(this.detail ? { detail: this.detail } : {}) } }
  }
}

export function isCode(value: string): value is Code {
  return Object.hasOwn(CODES, value)
}
