// Server certificates issued by the Platform CA (docs/security.md): the
// enrollment listener's (vault `tls/`) and the API's (`api/`). Each is kept
// while it covers its addresses and has more than 30 days left, and is
// otherwise replaced by a new one from the same CA, so the pin nodes hold
// never changes. Servers send the chain: the certificate, then the CA.
//
// Upgrade in place: a listener certificate from before the CA (self-signed,
// pinned by its own fingerprint) is kept while it covers the addresses and is
// valid, and is sent alone. Meanwhile nodes learn the CA pin at their daily
// trust refresh; the first renewal replaces it with one from the CA.
//
// Several Platforms share one vault (docs/storage-ha.md), each with its own addresses:
// a certificate is written under a name derived from the addresses it covers
// (`tls/<tag>/cert.pem`), so each Platform keeps its own and none replaces
// another's. One stored under the plain name (by an earlier version) is still
// used while it fits.
import { certNames } from '../addresses.ts'
import { isIssuedBy, isSelfSigned, issueServerCert, keyMatchesCert } from '../crypto/ca.ts'
import { certCovers, parseCertificate } from '../crypto/x509.ts'
import { sha256Hex } from '../crypto/tokens.ts'
import { log } from '../log.ts'
import type { Vault } from '../context/vault.ts'
import type { PlatformCa } from './platform-ca.ts'

export const SERVER_CERT_DAYS = 365
export const RENEW_DAYS = 30
const DAY_MS = 86_400_000
/** A certificate from before the CA is replaced only this close to its end: nodes refresh daily. */
const LEGACY_RENEW_MS = 2 * DAY_MS

export type CertSlot = 'tls' | 'api'

export interface ServerCert {
  /** The server certificate alone. */
  certPem: string
  keyPem: string
  /** What the server sends: the certificate and the CA (the old self-signed certificate alone). */
  chainPem: string
  /** The pin a joining node is given: the CA pin, or the old certificate's own fingerprint while it is served. */
  pin: string
  /** A self-signed listener certificate from before the Platform CA. */
  legacy: boolean
  notAfter: Date
  /** From this time (ms) the certificate is due for renewal. */
  renewAt: number
  addresses: string[]
}

const files = (dir: string) => ({ cert: `${dir}/cert.pem`, key: `${dir}/key.pem` })
/** Where the certificate for these addresses is kept: one per set of addresses, so Platforms sharing the vault keep their own. */
export const certDir = (slot: CertSlot, addresses: string[]) => `${slot}/${sha256Hex([...new Set(addresses)].sort().join(',')).slice(0, 16)}`

interface Stored {
  certPem: string
  keyPem: string
}

/** Why the stored certificate must be replaced, or null when it is fine. */
export function renewalReason(slot: CertSlot, stored: Stored | null, ca: PlatformCa, addresses: string[], now: number): string | null {
  if (!stored) return 'no certificate yet'
  if (!keyMatchesCert(stored.certPem, stored.keyPem)) return 'the key does not match the certificate'
  const legacy = isLegacy(slot, stored.certPem, ca)
  if (!legacy && !isIssuedBy(stored.certPem, ca.certPem)) return 'it was not issued by the Platform CA'
  if (!certCovers(stored.certPem, certNames(addresses))) return `it does not cover ${addresses.join(', ')}`
  const notAfter = parseCertificate(stored.certPem).notAfter.getTime()
  if (now >= notAfter - (legacy ? LEGACY_RENEW_MS : RENEW_DAYS * DAY_MS)) return legacy ? 'it expires within 2 days' : `it expires within ${RENEW_DAYS} days`
  return null
}

function isLegacy(slot: CertSlot, certPem: string, ca: PlatformCa): boolean {
  return slot === 'tls' && isSelfSigned(certPem) && !isIssuedBy(certPem, ca.certPem)
}

function describe(slot: CertSlot, stored: Stored, ca: PlatformCa, addresses: string[]): ServerCert {
  const c = parseCertificate(stored.certPem)
  const legacy = isLegacy(slot, stored.certPem, ca)
  return {
    ...stored,
    chainPem: legacy ? stored.certPem : stored.certPem + ca.certPem,
    pin: legacy ? c.fingerprint : ca.pin,
    legacy,
    notAfter: c.notAfter,
    renewAt: c.notAfter.getTime() - (legacy ? LEGACY_RENEW_MS : RENEW_DAYS * DAY_MS),
    addresses: [...addresses],
  }
}

async function readStored(vault: Vault, dir: string): Promise<Stored | null> {
  const f = files(dir)
  const [certPem, keyPem] = await Promise.all([vault.get(f.cert), vault.get(f.key)])
  return certPem && keyPem ? { certPem, keyPem } : null
}

const purpose = (slot: CertSlot) => (slot === 'tls' ? "the enrollment listener's" : "the API's")

/** Loads the certificate for `slot`, issuing a new one from the CA when it no longer fits. */
export async function ensureServerCert(vault: Vault, ca: PlatformCa, slot: CertSlot, addresses: string[], now: number): Promise<ServerCert & { renewed: boolean }> {
  const dir = certDir(slot, addresses)
  // Its own first; else one under the plain name (an earlier version, which had one Platform).
  const stored = (await readStored(vault, dir)) ?? (await readStored(vault, slot))
  const reason = renewalReason(slot, stored, ca, addresses, now)
  if (stored && reason === null) return { ...describe(slot, stored, ca, addresses), renewed: false }
  const fresh = await issueServerCert(ca, { commonName: 'muster platform', ...certNames(addresses), days: SERVER_CERT_DAYS, now })
  const f = files(dir)
  // Key first: a crash between the writes leaves a mismatch, which the next check repairs.
  await vault.put(f.key, fresh.keyPem)
  await vault.put(f.cert, fresh.certPem)
  const next = describe(slot, { certPem: fresh.certPem, keyPem: fresh.keyPem }, ca, addresses)
  const wasLegacy = stored !== null && isLegacy(slot, stored.certPem, ca)
  if (wasLegacy) {
    log.warn(
      [
        `The enrollment listener now presents a certificate issued by the Platform CA (${reason}).`,
        `  Nodes that refreshed their trust since the upgrade hold the CA pin ${ca.pin} and keep working.`,
        `  A node still pinned to the old certificate ${parseCertificate(stored.certPem).fingerprint} must join again.`,
      ].join('\n'),
    )
  } else {
    log.info(`${purpose(slot)} certificate ${stored ? `renewed (${reason})` : 'issued'} by the Platform CA; valid until ${next.notAfter.toISOString()}; the pin stays ${ca.pin}`)
  }
  return { ...next, renewed: true }
}
