// The Platform CA (docs/security.md): made on first start, kept in the vault as
// `ca/cert.pem` and `ca/key.pem`, valid 10 years. Its key's SHA-256 is the pin
// every node holds, so it is never replaced silently: a CA key that went
// missing stops the Platform with the way to repair it.
//
// A replacement made on purpose (`muster admin ca prepare`, then `promote`)
// waits in `ca-next/` while nodes learn its pin.
import { generateCa, keyMatchesCert, spkiPin } from '../crypto/ca.ts'
import { parseCertificate } from '../crypto/x509.ts'
import { MusterError } from '../errors.ts'
import { log } from '../log.ts'
import type { Vault } from '../context/vault.ts'

export const CA_SLOTS = { current: 'ca', next: 'ca-next', previous: 'ca-previous' } as const
type Slot = keyof typeof CA_SLOTS
const DAY_MS = 86_400_000
/** A CA with this little left is reported (doctor, `nodes platform`). */
export const CA_WARN_DAYS = 365

export interface PlatformCa {
  certPem: string
  keyPem: string
  /** `sha256:` + hex of the CA's SubjectPublicKeyInfo: what nodes pin. */
  pin: string
  notAfter: Date
}

const names = (slot: Slot) => ({ cert: `${CA_SLOTS[slot]}/cert.pem`, key: `${CA_SLOTS[slot]}/key.pem` })

function toCa(certPem: string, keyPem: string): PlatformCa {
  return { certPem, keyPem, pin: spkiPin(certPem), notAfter: parseCertificate(certPem).notAfter }
}

/** The CA in `slot`, or null when there is none; a certificate without its key is refused. */
export async function readCa(vault: Vault, slot: Slot = 'current'): Promise<PlatformCa | null> {
  const n = names(slot)
  const [certPem, keyPem] = await Promise.all([vault.get(n.cert), vault.get(n.key)])
  if (!certPem && !keyPem) return null
  if (!certPem || !keyPem || !keyMatchesCert(certPem, keyPem)) {
    throw new MusterError(
      'not-configured',
      `The Platform CA in the vault (${n.cert}, ${n.key}) is incomplete or its key does not match. Every node pins this CA: restore both from a backup of the data directory. Only to start over on purpose, remove both (every node must then join again).`,
    )
  }
  return toCa(certPem, keyPem)
}

/** The Platform CA, created on first start. Safe when several Platforms share the vault: one key wins. */
export async function loadOrCreateCa(vault: Vault, now: number): Promise<PlatformCa> {
  const existing = await readCa(vault)
  if (existing) return existing
  const n = names('current')
  const fresh = await generateCa(undefined, now)
  if (await vault.create(n.key, fresh.keyPem)) {
    await vault.put(n.cert, fresh.certPem)
    const ca = toCa(fresh.certPem, fresh.keyPem)
    log.info(`Platform CA created: pin ${ca.pin}, valid until ${ca.notAfter.toISOString()}`)
    return ca
  }
  // Another Platform made the key first: its certificate follows in a moment.
  const deadline = Date.now() + 10_000
  for (;;) {
    const ca = await readCa(vault).catch(() => null)
    if (ca) return ca
    if (Date.now() > deadline) return (await readCa(vault))!
    await Bun.sleep(100)
  }
}

/** Days the CA has left at `now` (negative once expired). */
export function caDaysLeft(ca: { notAfter: Date }, now: number): number {
  return Math.floor((ca.notAfter.getTime() - now) / DAY_MS)
}

/** A warning when the CA has a year or less left, else null. */
export function caWarning(ca: { notAfter: Date }, now: number): string | null {
  const days = caDaysLeft(ca, now)
  if (days > CA_WARN_DAYS) return null
  const when = days < 0 ? `expired on ${ca.notAfter.toISOString()}` : `expires on ${ca.notAfter.toISOString()} (${days} days left)`
  return `The Platform CA ${when}: replace it before then (muster admin ca prepare, wait for every node to refresh, then muster admin ca promote; see docs/security.md, "Replacing the Platform CA").`
}
