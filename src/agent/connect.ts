// How the node reaches its Platform. Two URLs (recorded in worker/agent.json):
//  - the enrollment URL it joined through, authenticated by the pin (or CA)
//    given at join; the enrollment listener forwards only enroll and trust,
//    so trust refreshes go here;
//  - the Platform API URL from the enroll answer, for heartbeats, renewals and
//    assignments. When https it is verified with the pins (the API's
//    certificate comes from the same Platform CA), the join's CA file, or the
//    system roots (an operator's --tls-cert that no pin names), or the CA
//    file given at join beside the pin (apiCaPem: a --tls-cert from a
//    private CA).
// Every request has a timeout and no redirect is ever followed.
import { createClient, type Client } from '../client/index.ts'
import { pinnedFetch, PinMismatchError } from '../crypto/pin.ts'
import { MusterError } from '../errors.ts'
import type { AgentConfig, PlatformPin } from './files.ts'

const TIMEOUT_MS = 30_000

export type Fetcher = (url: string, init: RequestInit) => Promise<Response>

/** Every pin a fingerprint-kind PlatformPin accepts, the primary first. */
export function pinsOf(pin: PlatformPin): string[] | null {
  return 'fingerprint' in pin ? [pin.fingerprint, ...(pin.also ?? []).filter((p) => p !== pin.fingerprint)] : null
}

/** A fetch that authenticates the server by `pin`; null pin = plain http. */
export function fetcherFor(pin: PlatformPin | null, timeoutMs = TIMEOUT_MS): Fetcher {
  return async (url, init) => {
    const withTimeout: RequestInit = { ...init, redirect: 'manual', signal: init.signal ?? AbortSignal.timeout(timeoutMs) }
    if (pin === null) return fetch(url, withTimeout)
    if ('system' in pin) {
      if (!url.startsWith('https://')) throw new MusterError('invalid-request', `${url}: only https is verified with the system roots`)
      return fetch(url, withTimeout)
    }
    if ('caPem' in pin) return pinnedFetch(url, withTimeout, pin)
    return pinnedFetch(url, withTimeout, { fingerprint: pinsOf(pin)! })
  }
}

const hostPort = (u: URL) => `${u.hostname}:${u.port || (u.protocol === 'https:' ? '443' : '80')}`

/** How the Platform API URL is authenticated (null: plain http, nothing to verify). */
export function apiPin(config: Pick<AgentConfig, 'platformUrl' | 'enrollmentUrl' | 'pin'>): PlatformPin | null {
  const api = new URL(config.platformUrl)
  if (api.protocol !== 'https:') return null
  return config.pin
}

// API origins whose certificate no pin names (the operator's --tls-cert): the system roots verify them.
const rootsFor = new Set<string>()

type ApiConnection = Pick<AgentConfig, 'platformUrl' | 'enrollmentUrl' | 'pin' | 'apiCaPem'>

/**
 * The API's fetch: the pins first; an API on another port whose chain no pin
 * names (the operator's --tls-cert) is verified by the CA file given at join
 * beside the pin, else by the system roots.
 */
export function apiFetcher(config: ApiConnection): Fetcher {
  const pin = apiPin(config)
  const pinned = fetcherFor(pin)
  if (!pin || !('fingerprint' in pin) || hostPort(new URL(config.platformUrl)) === hostPort(new URL(config.enrollmentUrl))) return pinned
  const roots = fetcherFor(config.apiCaPem ? { caPem: config.apiCaPem } : { system: true })
  return async (url, init) => {
    const origin = new URL(url).origin
    if (!rootsFor.has(origin)) {
      try {
        return await pinned(url, init)
      } catch (e) {
        if (!(e instanceof PinMismatchError)) throw e
      }
    }
    try {
      const res = await roots(url, init)
      rootsFor.add(origin)
      return res
    } catch (e) {
      rootsFor.delete(origin)
      throw e
    }
  }
}

/** Anonymous client for the enrollment URL (enroll, trust). */
export function enrollmentClient(config: Pick<AgentConfig, 'enrollmentUrl' | 'pin'>): Client {
  return createClient({ url: config.enrollmentUrl, fetch: fetcherFor(config.pin) })
}

/** The Platform API, authenticated with the node credential. */
export function apiClient(config: ApiConnection, credential: string): Client {
  return createClient({ url: config.platformUrl, token: credential, fetch: apiFetcher(config) })
}
