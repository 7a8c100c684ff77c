// The node side's HTTPS client (SPEC §7): it authenticates the server before a
// byte of the request is written — by a pinned certificate fingerprint or by a
// CA — and never follows a redirect.
//
// Fingerprint pins take two steps, because fetch's checkServerIdentity alone
// does not pin a self-signed certificate (BUN-NOTES "Pinning a server"):
//   1. probe: a node:tls handshake (nothing written) learns the certificate;
//      its SHA-256 must equal the pin, or PinMismatchError.
//   2. fetch with that certificate as the only trust anchor plus a
//      checkServerIdentity that compares the fingerprint again, so the
//      connection that carries the request presents the pinned certificate.
import { connect } from 'node:tls'
import { isIP } from 'node:net'
import { MusterError } from '../errors.ts'
import { safeEqual } from './tokens.ts'
import { certFingerprint, derToPem } from './x509.ts'

export type Pin = { fingerprint: string } | { caPem: string }

/** The server presented a certificate other than the pinned one. */
export class PinMismatchError extends Error {
  constructor(
    readonly expected: string,
    readonly seen: string,
  ) {
    super(`server certificate ${seen} does not match the pinned ${expected}`)
    this.name = 'PinMismatchError'
  }
}

const FINGERPRINT = /^sha256:[0-9a-f]{64}$/
const PROBE_TIMEOUT_MS = 10_000

// host|port|pin → PEM of the pinned certificate, so later requests skip the probe.
const learned = new Map<string, string>()

function normalisePin(fingerprint: string): string {
  const fp = fingerprint.trim().toLowerCase()
  if (!FINGERPRINT.test(fp)) throw new MusterError('invalid-request', 'pin: fingerprint must be sha256: and 64 hex digits')
  return fp
}

/** node:tls spells fingerprints as colon-separated upper-case hex. */
function fromColonHex(fingerprint256: string): string {
  return `sha256:${fingerprint256.replace(/:/g, '').toLowerCase()}`
}

/**
 * The certificate a TLS server presents, learned from the handshake alone:
 * nothing is written, and the socket is destroyed straight after.
 */
export function probeCertificate(
  host: string,
  port: number,
  opts: { timeoutMs?: number } = {},
): Promise<{ pem: string; fingerprint: string }> {
  const bare = host.replace(/^\[(.*)\]$/, '$1')
  return new Promise((resolve, reject) => {
    const socket = connect({
      host: bare,
      port,
      // SNI is for DNS names only (RFC 6066 §3).
      ...(isIP(bare) ? {} : { servername: bare }),
      rejectUnauthorized: false,
    })
    const fail = (err: Error) => {
      socket.destroy()
      reject(err)
    }
    socket.setTimeout(opts.timeoutMs ?? PROBE_TIMEOUT_MS, () => fail(new Error(`TLS handshake with ${host}:${port} timed out`)))
    socket.once('error', fail)
    socket.once('secureConnect', () => {
      const raw = socket.getPeerCertificate(true)?.raw
      socket.destroy()
      if (!raw || raw.length === 0) return reject(new Error(`${host}:${port} presented no certificate`))
      const der = new Uint8Array(raw)
      resolve({ pem: derToPem(der), fingerprint: certFingerprint(der) })
    })
  })
}

function portOf(url: URL): number {
  return url.port ? Number(url.port) : 443
}

const cacheKey = (url: URL, fingerprint: string) => `${url.hostname}|${portOf(url)}|${fingerprint}`

async function pinnedPem(url: URL, fingerprint: string): Promise<string> {
  const cached = learned.get(cacheKey(url, fingerprint))
  if (cached) return cached
  const seen = await probeCertificate(url.hostname, portOf(url))
  if (!safeEqual(seen.fingerprint, fingerprint)) throw new PinMismatchError(fingerprint, seen.fingerprint)
  learned.set(cacheKey(url, fingerprint), seen.pem)
  return seen.pem
}

/** Forgets learned certificates (tests; or after the server's pin changed). */
export function clearPinCache(): void {
  learned.clear()
}

/**
 * fetch() that authenticates the server by `pin` first. A 3xx is returned as
 * is, never followed: callers treat it as an error. Refuses non-https URLs.
 * Network failures reject as fetch and node:tls report them.
 */
export async function pinnedFetch(url: string | URL, init: RequestInit, pin: Pin): Promise<Response> {
  const target = new URL(url)
  if (target.protocol !== 'https:') throw new MusterError('invalid-request', 'pinnedFetch: the URL must be https')
  // Our tls replaces any the caller passed: nothing may weaken verification.
  const base: BunFetchRequestInit = { ...init, redirect: 'manual' }
  if ('caPem' in pin) {
    if (!pin.caPem.includes('-----BEGIN CERTIFICATE-----')) throw new MusterError('invalid-request', 'pin: caPem must be a PEM certificate')
    return fetch(target, { ...base, tls: { ca: pin.caPem } })
  }
  const fingerprint = normalisePin(pin.fingerprint)
  const pem = await pinnedPem(target, fingerprint)
  try {
    const pinned: BunFetchRequestInit = {
      ...base,
      tls: {
        ca: pem,
        checkServerIdentity: (_host, cert) => {
          const seen = fromColonHex(cert.fingerprint256 ?? '')
          return safeEqual(seen, fingerprint) ? undefined : new PinMismatchError(fingerprint, seen)
        },
      },
    }
    return await fetch(target, pinned)
  } catch (err) {
    // If the server now presents another certificate, fetch reports a bare TLS
    // error; forgetting it makes the next call probe again and say PinMismatch.
    learned.delete(cacheKey(target, fingerprint))
    throw err
  }
}
