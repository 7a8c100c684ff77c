// The Platform's Ed25519 trust keys (SPEC §16.2), kept in the vault as
// `trust/<name>.json`. The schedule (trust-schedule.ts) is a pure function of
// the keys and the time; this class applies it: on start, on a short tick (so
// a wall clock that jumped is seen at once), and whenever it signs or
// publishes. Names of keys made for a start time are derived from that time,
// so Platforms sharing the vault that plan the same successor keep one.
import { generateSigningKey, signDomain } from '../crypto/ed25519.ts'
import { b64url, fromB64url, sha256Hex } from '../crypto/tokens.ts'
import { log } from '../log.ts'
import type { Vault } from '../vault.ts'
import { planTrustKeys, signingKey, type TrustPlan } from './trust-schedule.ts'

export { KEY_LIFETIME_MS, SIGNING_MS } from './trust-schedule.ts'
const TICK_MS = 10_000

export interface TrustKey {
  kid: string
  publicKey: string
  notBefore: string
  notAfter: string
}

interface StoredKey extends TrustKey {
  privateKey: string
}

const isStoredKey = (k: Partial<StoredKey> | null): k is StoredKey =>
  !!k && typeof k.kid === 'string' && typeof k.publicKey === 'string' && typeof k.privateKey === 'string' && Number.isFinite(Date.parse(k.notBefore ?? '')) && Number.isFinite(Date.parse(k.notAfter ?? ''))

export class TrustKeys {
  /** name in the vault → key */
  private keys = new Map<string, StoredKey>()
  /** Writes of keys made on the spot (nothing could sign); a sync waits for them. */
  private writing = new Set<Promise<unknown>>()
  private syncing: Promise<void> | undefined

  constructor(
    private readonly vault: Vault,
    private readonly now: () => number,
  ) {}

  /** Re-reads the vault and applies the schedule: creates a due key, drops expired ones. */
  sync(): Promise<void> {
    this.syncing ??= this.doSync().finally(() => (this.syncing = undefined))
    return this.syncing
  }

  private async doSync(): Promise<void> {
    await Promise.all(this.writing)
    const found = new Map<string, StoredKey>()
    for (const name of await this.vault.list('trust/')) {
      if (!name.endsWith('.json')) continue
      try {
        const k = JSON.parse((await this.vault.get(name)) ?? 'null') as Partial<StoredKey> | null
        if (isStoredKey(k)) found.set(name, k)
        else log.warn(`trust key ${name} is unreadable; ignored`)
      } catch {
        log.warn(`trust key ${name} is unreadable; ignored`)
      }
    }
    this.keys = found
    const now = this.now()
    const plan = planTrustKeys([...found.values()], now)
    for (const [name, k] of found) {
      if (!plan.expired.includes(k.kid)) continue
      await this.vault.delete(name)
      this.keys.delete(name)
      log.info(`trust key ${k.kid} expired and was removed`)
    }
    if (plan.create) await this.create(plan.create)
  }

  private async create(c: NonNullable<TrustPlan['create']>): Promise<StoredKey> {
    const name = `trust/from-${c.notBefore}.json`
    const key = newKey(c.notBefore, c.notAfter)
    if (await this.vault.create(name, JSON.stringify(key))) {
      this.keys.set(name, key)
      log.info(`trust key ${key.kid} created (${c.why}): signs from ${key.notBefore}, valid until ${key.notAfter}`)
      return key
    }
    // Another Platform made the key for this start time first: use its key.
    const theirs = JSON.parse((await this.vault.get(name)) ?? 'null') as StoredKey | null
    if (!isStoredKey(theirs)) throw new Error(`trust key ${name} is unreadable`)
    this.keys.set(name, theirs)
    return theirs
  }

  /** Applies the schedule on a short tick; returns the stop function. */
  start(): () => void {
    const t = setInterval(() => void this.sync().catch((e) => log.warn(`trust keys: ${(e as Error).message}`)), TICK_MS)
    t.unref?.()
    return () => clearInterval(t)
  }

  /** The key that signs now; made on the spot (and written in the background) when none can. */
  private signer(): StoredKey {
    const now = this.now()
    const current = signingKey([...this.keys.values()], now)
    if (current) return current
    const plan = planTrustKeys([...this.keys.values()], now)
    const c = plan.create ?? { notBefore: now, notAfter: now + 2 * 365 * 86_400_000, why: 'no key can sign with notice' as const }
    const key = newKey(c.notBefore, c.notAfter)
    const name = `trust/from-${c.notBefore}.json`
    this.keys.set(name, key)
    log.info(`trust key ${key.kid} created (${c.why}): signs now, valid until ${key.notAfter}`)
    const write: Promise<unknown> = this.vault.create(name, JSON.stringify(key)).catch((e) => log.warn(`trust key ${key.kid} was not saved: ${(e as Error).message}`))
    this.writing.add(write)
    void write.finally(() => this.writing.delete(write))
    return key
  }

  /** The published set: every key not yet expired, future ones included (public halves only), oldest first. */
  published(): TrustKey[] {
    this.signer() // a Platform that cannot sign publishes the key it will sign with
    const now = this.now()
    return [...this.keys.values()]
      .filter((k) => Date.parse(k.notAfter) > now)
      .sort((a, b) => Date.parse(a.notBefore) - Date.parse(b.notBefore))
      .map(({ kid, publicKey, notBefore, notAfter }) => ({ kid, publicKey, notBefore, notAfter }))
  }

  /** The kid signing now. */
  currentKid(): string {
    return this.signer().kid
  }

  /** Signs with the key the schedule names for now. */
  sign(domain: string, message: string | Uint8Array): { kid: string; signature: string } {
    const key = this.signer()
    return { kid: key.kid, signature: b64url(signDomain(domain, fromB64url(key.privateKey), message)) }
  }
}

function newKey(notBefore: number, notAfter: number): StoredKey {
  const { privateKey, publicKey } = generateSigningKey()
  return {
    kid: sha256Hex(publicKey).slice(0, 16),
    publicKey: b64url(publicKey),
    privateKey: b64url(privateKey),
    notBefore: new Date(notBefore).toISOString(),
    notAfter: new Date(notAfter).toISOString(),
  }
}
