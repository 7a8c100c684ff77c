// How the node reaches its Platform. Two URLs (recorded in worker/agent.json):
//  - the enrollment URL it joined through, authenticated by the pin (or CA)
//    given at join; the enrollment listener forwards only enroll and trust,
//    so trust refreshes go here;
//  - the Platform API URL from the enroll answer, for heartbeats, renewals and
//    assignments. When https it is verified with the join's CA, else the
//    system roots — or with the pin when it is the same host and port.
// Every request has a timeout and no redirect is ever followed.
import { createClient, type Client } from '../client/index.ts'
import { pinnedFetch } from '../crypto/pin.ts'
import { MusterError } from '../errors.ts'
import type { AgentConfig, PlatformPin } from './files.ts'

const TIMEOUT_MS = 30_000

export type Fetcher = (url: string, init: RequestInit) => Promise<Response>

/** A fetch that authenticates the server by `pin`; null pin = plain http. */
export function fetcherFor(pin: PlatformPin | null, timeoutMs = TIMEOUT_MS): Fetcher {
  return async (url, init) => {
    const withTimeout: RequestInit = { ...init, redirect: 'manual', signal: init.signal ?? AbortSignal.timeout(timeoutMs) }
    if (pin === null) return fetch(url, withTimeout)
    if ('system' in pin) {
      if (!url.startsWith('https://')) throw new MusterError('invalid-request', `${url}: only https is verified with the system roots`)
      return fetch(url, withTimeout)
    }
    return pinnedFetch(url, withTimeout, pin)
  }
}

const hostPort = (u: URL) => `${u.hostname}:${u.port || (u.protocol === 'https:' ? '443' : '80')}`

/** How the Platform API URL is authenticated (null: plain http, nothing to verify). */
export function apiPin(config: Pick<AgentConfig, 'platformUrl' | 'enrollmentUrl' | 'pin'>): PlatformPin | null {
  const api = new URL(config.platformUrl)
  if (api.protocol !== 'https:') return null
  if (hostPort(api) === hostPort(new URL(config.enrollmentUrl))) return config.pin
  if ('caPem' in config.pin) return config.pin
  return { system: true }
}

/** Anonymous client for the enrollment URL (enroll, trust). */
export function enrollmentClient(config: Pick<AgentConfig, 'enrollmentUrl' | 'pin'>): Client {
  return createClient({ url: config.enrollmentUrl, fetch: fetcherFor(config.pin) })
}

/** The Platform API, authenticated with the node credential. */
export function apiClient(config: Pick<AgentConfig, 'platformUrl' | 'enrollmentUrl' | 'pin'>, credential: string): Client {
  return createClient({ url: config.platformUrl, token: credential, fetch: fetcherFor(apiPin(config)) })
}
