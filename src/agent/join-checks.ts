// The checks `worker join` makes before it reads the token:
// the token's shape, the Platform authenticated on a bare TLS handshake, and
// the Platform API the Agent will heartbeat to reachable and authenticated
// the way the Agent will do it. Every failure is one line that names the flag
// or the URL that fixes it; nothing of the token is sent before all pass.
import { connect } from 'node:tls'
import { isIP } from 'node:net'
import { isLoopback } from '../addresses.ts'
import { explainNetworkError } from '../client/net-errors.ts'
import { authenticateByPin } from '../crypto/pin.ts'
import { MusterError } from '../errors.ts'
import { apiFetcher, enrollmentClient } from './connect.ts'
import type { PlatformPin } from './files.ts'

const JOIN_TOKEN = /^mjt_[a-z2-7]{16}\.[A-Za-z0-9_-]{43}$/

/** A join token has one shape (mjt_ + 16 + . + 43); anything else is refused here, before it is sent. */
export function checkTokenShape(token: string): void {
  if (JOIN_TOKEN.test(token)) return
  const looks = token.startsWith('mat_') ? ' (that is an operator API token, not a join token)' : token.startsWith('mnc_') ? ' (that is a node credential, not a join token)' : ''
  throw new MusterError('invalid-request', `That is not a join token${looks}: a join token looks like mjt_ followed by 60 characters, as \`muster nodes join-token create\` or \`muster nodes enroll-token NAME\` print it. Nothing was sent.`)
}

/** An https URL that failed on plain http: is it the Platform's API port? (its /healthz answers `{ ok, version }`). */
async function isMusterApi(url: string): Promise<boolean> {
  const u = new URL(url)
  try {
    const res = await fetch(`http://${u.host}/healthz`, { redirect: 'manual', signal: AbortSignal.timeout(3000) })
    const body = (await res.json().catch(() => null)) as { ok?: unknown; version?: unknown } | null
    return res.ok && body?.ok === true && typeof body.version === 'string'
  } catch {
    return false
  }
}

/** The failure of a connection to the Platform at `url`, as one line with the fix (`what` names the URL's role). */
async function failure(url: string, e: unknown, what: string, how: { caFile?: boolean } = {}): Promise<MusterError> {
  // The SDK's errors are explained already (src/client/net-errors.ts).
  if (e instanceof MusterError) return e
  const f = explainNetworkError(url, e, how)
  const origin = new URL(url).origin
  if (f.kind === 'plain-http' || f.kind === 'reset') {
    if (await isMusterApi(url)) {
      return new MusterError('invalid-request', `${origin} is the Platform's API port (plain http), not the enrollment listener: give --platform-url the listener's https URL (\`muster nodes platform\` prints it); nothing was sent.`)
    }
    if (f.kind === 'plain-http') return new MusterError('invalid-request', `${origin}: ${f.text}; nothing was sent.`)
  }
  const forbidden = f.kind === 'pin-mismatch' || f.kind === 'untrusted' || f.kind === 'wrong-name' || f.kind === 'expired'
  if (forbidden) return new MusterError('forbidden', `The ${what} at ${origin} could not be authenticated: ${f.text}; nothing was sent.`)
  return new MusterError('platform-unreachable', `Cannot reach the ${what} at ${origin}: ${f.text}`)
}

/** A TLS handshake that checks the pin or the CA; nothing is written on it. */
export async function authenticatePlatform(url: string, pin: PlatformPin): Promise<void> {
  const u = new URL(url)
  const port = Number(u.port || 443)
  const host = u.hostname.replace(/^\[(.*)\]$/, '$1')
  try {
    // The chain must lead to a CA with the pinned key (or be the pinned certificate); nothing is written.
    if ('fingerprint' in pin) return void (await authenticateByPin(host, port, [pin.fingerprint]))
    await new Promise<void>((resolve, reject) => {
      const s = connect({ host, port, ...(isIP(host) ? {} : { servername: host }), ...('caPem' in pin ? { ca: pin.caPem } : {}), rejectUnauthorized: true })
      s.setTimeout(10_000, () => s.destroy(Object.assign(new Error('TLS handshake timed out'), { code: 'ETIMEDOUT' })))
      s.once('error', reject)
      s.once('secureConnect', () => {
        s.destroy()
        resolve()
      })
    })
  } catch (e) {
    throw await failure(url, e, 'Platform', { caFile: 'caPem' in pin })
  }
}

/**
 * The API the Agent will use, asked of the listener (its trust answer names
 * it) and tried the way the Agent will try it: a Platform whose API has its
 * own certificate (serve --tls-cert) from a CA no pin names needs
 * --platform-ca-file beside the pin. Returns the API URL.
 */
export async function checkPlatformApi(enrollmentUrl: string, pin: PlatformPin, apiCaPem: string | undefined): Promise<string | undefined> {
  let platformUrl: string
  try {
    platformUrl = (await enrollmentClient({ enrollmentUrl, pin }).nodes.trust()).platformUrl
  } catch (e) {
    // An older Platform, or nodes disabled: the enrollment answers for itself.
    if (e instanceof MusterError && e.code !== 'platform-unreachable') return undefined
    throw await failure(enrollmentUrl, e, 'Platform')
  }
  if (typeof platformUrl !== 'string' || !URL.canParse(platformUrl)) return undefined
  const api = new URL(platformUrl)
  if (api.protocol !== 'https:' || (isLoopback(api.hostname) && !isLoopback(new URL(enrollmentUrl).hostname))) return platformUrl
  try {
    // A bare GET of /healthz: no credential exists yet, and nothing of the token is sent.
    await apiFetcher({ platformUrl: api.origin, enrollmentUrl, pin, ...(apiCaPem ? { apiCaPem } : {}) })(`${api.origin}/healthz`, { method: 'GET' })
  } catch (e) {
    const err = await failure(api.origin, e, 'Platform API', { caFile: Boolean(apiCaPem) || 'caPem' in pin })
    if (err.code === 'forbidden' && 'fingerprint' in pin && !apiCaPem) {
      throw new MusterError(
        'forbidden',
        `The Platform API at ${api.origin} (where this node would heartbeat) has a certificate no pin names and no CA here trusts: its Platform runs with its own --tls-cert. Join again with --platform-ca-file FILE (the CA that signed that certificate) beside --platform-fingerprint; nothing was sent.`,
      )
    }
    throw err
  }
  return platformUrl
}
