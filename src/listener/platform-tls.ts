// platform/tls/: the Platform's self-signed certificate for the enrollment
// listener (SPEC §3, §8). Kept while it covers the listener's addresses and has
// more than 30 days left; otherwise replaced, and the replacement is logged
// loudly because nodes pin its fingerprint.
import { createPrivateKey, createPublicKey } from 'node:crypto'
import { certNames } from '../addresses.ts'
import { certCovers, expiresWithin, generateKeyAndCert, parseCertificate } from '../crypto/x509.ts'
import type { DataDir } from '../datadir.ts'
import { log } from '../log.ts'

export const TLS_CERT_FILE = 'platform/tls/cert.pem'
export const TLS_KEY_FILE = 'platform/tls/key.pem'
export const TLS_LIFETIME_DAYS = 365
export const TLS_RENEW_DAYS = 30

export interface PlatformTls {
  certPem: string
  keyPem: string
  fingerprint: string
  notAfter: Date
}

/** Why the stored certificate must be replaced, or null when it is fine. */
export function renewalReason(stored: { certPem: string; keyPem: string } | undefined, addresses: string[], now: number): string | null {
  if (!stored) return 'no certificate yet'
  if (!keyMatches(stored.certPem, stored.keyPem)) return 'the key does not match the certificate'
  if (!certCovers(stored.certPem, certNames(addresses))) return `it does not cover ${addresses.join(', ')}`
  if (expiresWithin(stored.certPem, TLS_RENEW_DAYS, now)) return `it expires within ${TLS_RENEW_DAYS} days`
  return null
}

function keyMatches(certPem: string, keyPem: string): boolean {
  try {
    const fromKey = createPublicKey(createPrivateKey(keyPem)).export({ format: 'der', type: 'spki' })
    return Buffer.from(parseCertificate(certPem).publicKeyDer).equals(fromKey)
  } catch {
    return false
  }
}

function readStored(dataDir: DataDir): { certPem: string; keyPem: string } | undefined {
  const keyPem = dataDir.readSecretText(TLS_KEY_FILE)
  const certPem = dataDir.exists(TLS_CERT_FILE) ? dataDir.readSecretText(TLS_CERT_FILE) : undefined
  return keyPem && certPem ? { keyPem, certPem } : undefined
}

/** Loads the listener's certificate, replacing it when it no longer fits. */
export async function ensurePlatformTls(dataDir: DataDir, addresses: string[], now: number): Promise<PlatformTls & { renewed: boolean }> {
  dataDir.ensureDir('platform/tls')
  const stored = readStored(dataDir)
  const reason = renewalReason(stored, addresses, now)
  if (stored && reason === null) {
    const c = parseCertificate(stored.certPem)
    return { ...stored, fingerprint: c.fingerprint, notAfter: c.notAfter, renewed: false }
  }
  const fresh = await generateKeyAndCert({ commonName: 'muster platform', ...certNames(addresses), days: TLS_LIFETIME_DAYS })
  // Key first: a crash between the writes leaves a mismatch, which the next start repairs.
  dataDir.writeSecret(TLS_KEY_FILE, fresh.keyPem)
  dataDir.writeSecret(TLS_CERT_FILE, fresh.certPem)
  if (stored) {
    const old = (() => {
      try {
        return parseCertificate(stored.certPem).fingerprint
      } catch {
        return 'unreadable'
      }
    })()
    log.warn(
      [
        `THE ENROLLMENT LISTENER'S CERTIFICATE CHANGED (${reason}).`,
        `  old fingerprint: ${old}`,
        `  new fingerprint: ${fresh.fingerprint}`,
        '  Nodes that pinned the old fingerprint can no longer refresh their trust keys, and new joins',
        '  must pin the new one: publish it with `muster nodes platform`.',
      ].join('\n'),
    )
  } else {
    log.info(`enrollment listener certificate created: ${fresh.fingerprint}`)
  }
  return { certPem: fresh.certPem, keyPem: fresh.keyPem, fingerprint: fresh.fingerprint, notAfter: fresh.notAfter, renewed: true }
}
