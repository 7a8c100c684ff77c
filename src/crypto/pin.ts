// The node side's HTTPS client (docs/nodes.md, docs/security.md): it authenticates the server
// before a byte of the request is written — by a pin or by a CA — and never
// follows a redirect.
//
// A pin is `sha256:` + hex and names either
//   - the Platform CA's key (SHA-256 of its DER SubjectPublicKeyInfo): the
//     server's chain must lead to a CA with that key, and the leaf must name
//     the host it was reached by; or
//   - one exact certificate (SHA-256 of its DER): the listener's self-signed
//     certificate from before the CA, which nodes joined then still hold.
//
// Pins take two steps, because fetch's checkServerIdentity alone does not pin
// a self-signed certificate (Bun's fetch takes no pin, and rejects such a
// certificate unless verification is off altogether):
//   1. probe: a node:tls handshake (nothing written) learns the chain; a
//      certificate in it must match a pin, or PinMismatchError;
//   2. fetch with that certificate as the only trust anchor plus a
//      checkServerIdentity that compares again on the connection that carries
//      the request (the CA signed this leaf, and it names the host; or the
//      leaf is the pinned certificate).
import { connect, checkServerIdentity as checkHostName, type PeerCertificate } from 'node:tls'
import { isIP } from 'node:net'
import { MusterError } from '../errors.ts'
import { isIssuedBy, spkiPin } from './ca.ts'
import { safeEqual } from './tokens.ts'
import { certFingerprint, derToPem } from './x509.ts'
import { X509Certificate } from 'node:crypto'

export type Pin = { fingerprint: string | readonly string[] } | { caPem: string }

/** The server presented nothing that matches the pin. */
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

/** What a pin matched in a chain: the certificate to anchor on, and how to compare again. */
export interface PinMatch {
  kind: 'ca' | 'certificate'
  /** The pin that matched. */
  pin: string
  /** PEM of the matched certificate: the only trust anchor for the request. */
  anchorPem: string
}

// host|port|pins → what the probe matched, so later requests skip the probe.
const learned = new Map<string, PinMatch>()

export function normalisePins(fingerprint: string | readonly string[]): string[] {
  const list = (typeof fingerprint === 'string' ? [fingerprint] : [...fingerprint]).map((f) => f.trim().toLowerCase())
  if (list.length === 0 || !list.every((f) => FINGERPRINT.test(f))) throw new MusterError('invalid-request', 'pin: fingerprint must be sha256: and 64 hex digits')
  return [...new Set(list)]
}

/** node:tls spells fingerprints as colon-separated upper-case hex. */
function fromColonHex(fingerprint256: string): string {
  return `sha256:${fingerprint256.replace(/:/g, '').toLowerCase()}`
}

const pinIn = (pins: readonly string[], value: string) => pins.some((p) => safeEqual(p, value))

/**
 * The certificate chain a TLS server presents (leaf first, DER), learned from
 * the handshake alone: nothing is written, and the socket is destroyed straight after.
 */
export function probeChain(host: string, port: number, opts: { timeoutMs?: number } = {}): Promise<Uint8Array[]> {
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
      const chain: Uint8Array[] = []
      let c: (PeerCertificate & { issuerCertificate?: PeerCertificate }) | undefined = socket.getPeerCertificate(true)
      while (c?.raw && c.raw.length > 0 && chain.length < 8) {
        const der = new Uint8Array(c.raw)
        if (chain.some((d) => Buffer.from(d).equals(der))) break // a self-signed root points at itself
        chain.push(der)
        c = c.issuerCertificate
      }
      socket.destroy()
      if (chain.length === 0) return reject(new Error(`${host}:${port} presented no certificate`))
      resolve(chain)
    })
  })
}

/** The leaf certificate a TLS server presents (see probeChain). */
export async function probeCertificate(host: string, port: number, opts: { timeoutMs?: number } = {}): Promise<{ pem: string; fingerprint: string }> {
  const [leaf] = await probeChain(host, port, opts)
  return { pem: derToPem(leaf!), fingerprint: certFingerprint(leaf!) }
}

const isCa = (der: Uint8Array) => {
  try {
    return new X509Certificate(Buffer.from(der)).ca
  } catch {
    return false
  }
}

/**
 * Which certificate of `chain` (leaf first) a pin names: the leaf itself, or
 * a CA whose key matches and which every certificate below it was issued by.
 */
export function matchPin(chain: Uint8Array[], pins: readonly string[]): PinMatch {
  const leaf = chain[0]
  if (!leaf) throw new PinMismatchError(pins.join(' or '), 'no certificate')
  const leafFingerprint = certFingerprint(leaf)
  if (pinIn(pins, leafFingerprint)) return { kind: 'certificate', pin: leafFingerprint, anchorPem: derToPem(leaf) }
  for (let i = 1; i < chain.length; i++) {
    if (!isIssuedBy(chain[i - 1]!, chain[i]!)) break // the chain stops making sense here
    const ca = chain[i]!
    let pin: string
    try {
      pin = spkiPin(ca)
    } catch {
      break
    }
    if (pinIn(pins, pin) && isCa(ca)) return { kind: 'ca', pin, anchorPem: derToPem(ca) }
  }
  throw new PinMismatchError(pins.join(' or '), leafFingerprint)
}

/** Probes host:port and matches the chain against the pins; nothing is written. */
export async function authenticateByPin(host: string, port: number, pins: readonly string[]): Promise<PinMatch> {
  return matchPin(await probeChain(host, port), pins)
}

/** The second comparison, on the connection that carries the request, against the pins themselves. */
export function secondComparison(match: PinMatch, pins: readonly string[]): (host: string, cert: PeerCertificate) => Error | undefined {
  return (host, cert) => {
    if (match.kind === 'certificate') {
      const seen = fromColonHex(cert.fingerprint256 ?? '')
      return pinIn(pins, seen) ? undefined : new PinMismatchError(pins.join(' or '), seen)
    }
    // A custom checkServerIdentity replaces the host name check: keep it.
    const wrongHost = checkHostName(host.replace(/^\[(.*)\]$/, '$1'), cert)
    if (wrongHost) return wrongHost
    const raw = cert.raw
    const seen = raw ? certFingerprint(new Uint8Array(raw)) : 'no certificate'
    return raw && isIssuedBy(new Uint8Array(raw), match.anchorPem) && pinIn(pins, spkiPin(match.anchorPem)) ? undefined : new PinMismatchError(pins.join(' or '), seen)
  }
}

function portOf(url: URL): number {
  return url.port ? Number(url.port) : 443
}

const cacheKey = (url: URL, pins: readonly string[]) => `${url.hostname}|${portOf(url)}|${pins.join(',')}`

async function learnedMatch(url: URL, pins: readonly string[]): Promise<{ match: PinMatch; cached: boolean }> {
  const cached = learned.get(cacheKey(url, pins))
  if (cached) return { match: cached, cached: true }
  const match = await authenticateByPin(url.hostname, portOf(url), pins)
  learned.set(cacheKey(url, pins), match)
  return { match, cached: false }
}

/** Forgets learned certificates (tests; or after the server's pin changed). */
export function clearPinCache(): void {
  learned.clear()
}

const certificateProblem = (e: unknown) =>
  e instanceof PinMismatchError || /CERT|SELF_SIGNED|ALTNAME|SIGNATURE|ISSUER|certificate/i.test(`${(e as { code?: string }).code ?? ''} ${(e as Error).message ?? ''}`)

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
  const pins = normalisePins(pin.fingerprint)
  for (let attempt = 0; ; attempt++) {
    const { match, cached } = await learnedMatch(target, pins)
    try {
      return await fetch(target, { ...base, tls: { ca: match.anchorPem, checkServerIdentity: secondComparison(match, pins) } })
    } catch (err) {
      // The server now presents another certificate (renewed, or moved from the
      // old self-signed one to the CA's): fetch reports a bare TLS error. The
      // handshake failed before any request byte, so probe again once.
      learned.delete(cacheKey(target, pins))
      if (!cached || attempt > 0 || !certificateProblem(err)) throw err
    }
  }
}
