// The Platform's Ed25519 trust keys (docs/security.md), kept in the vault as
// `trust/<name>.json`. The schedule (trust-schedule.ts) is a pure function of
// the keys and the time; this class applies it: on start, on a short tick (so
// a wall clock that jumped is seen at once), and whenever it signs or
// publishes. Names of keys made for a start time are derived from that time,
// so Platforms sharing the vault that plan the same successor keep one; the
// very first key has a fixed name, so Platforms starting together on an empty
// store keep one too.
//
// Several Platforms (docs/storage-ha.md): the schedule's writes (a successor, dropping
// expired keys) are made only by the holder of the `trust-keys` lease, in a
// transaction fenced by it, which then tells the others; they re-read the
// vault. A Platform that has no key able to sign still makes one on the spot,
// whatever the lease says: signing never waits for another Platform.
import { generateSigningKey, signDomain } from '../crypto/ed25519.ts'
import { b64url, fromB64url, sha256Hex } from '../crypto/tokens.ts'
import { log } from '../log.ts'
import type { TrustKey } from '../wire/nodes.ts'
import type { Vault } from '../context/vault.ts'
import { planTrustKeys, rotationAt, signingKey, type TrustPlan } from './trust-schedule.ts'

export { KEY_LIFETIME_MS, SIGNING_MS } from './trust-schedule.ts'
const TICK_MS = 10_000


interface StoredKey extends TrustKey {
  privateKey: string
}

/** How the schedule may write: whether this Platform runs it now, and a vault whose writes are fenced by the lease. */
export interface TrustSchedule {
  held(): boolean
  fenced<T>(fn: (vault: Vault) => Promise<T>): Promise<T>
  /** Tells the other Platforms the keys changed. */
  changed(): Promise<void>
}

/** A single Platform (tests, tools): it always runs the schedule, unfenced. */
export const soleSchedule = (vault: Vault): TrustSchedule => ({ held: () => true, fenced: (fn) => fn(vault), changed: async () => {} })

const FIRST = 'trust/first.json'
const nameFor = (c: NonNullable<TrustPlan['create']>) => (c.why === 'first key' ? FIRST : `trust/from-${c.notBefore}.json`)

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
    private readonly schedule: TrustSchedule = soleSchedule(vault),
  ) {}

  /** Re-reads the vault and, on the Platform holding the schedule's lease, applies it: creates a due key, drops expired ones. */
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
    const held = this.schedule.held()
    // Only the schedule's holder plans; a Platform with no key that can sign makes one now, whatever the lease says.
    if (!held && signingKey([...found.values()], now)) return
    const plan = planTrustKeys([...found.values()], now)
    const expired = held ? [...found].filter(([, k]) => plan.expired.includes(k.kid)) : []
    if (expired.length === 0 && !plan.create) return
    const made = plan.create ? { name: nameFor(plan.create), key: newKey(plan.create.notBefore, plan.create.notAfter) } : undefined
    const writeKeys = async (v: Vault) => {
      for (const [name] of expired) await v.delete(name)
      return made ? v.create(made.name, JSON.stringify(made.key)) : false
    }
    // The holder writes in one transaction fenced by the lease: one that lost it meanwhile writes nothing (LeaseLost).
    const created = held ? await this.schedule.fenced(writeKeys) : await writeKeys(this.vault)
    for (const [name, k] of expired) {
      this.keys.delete(name)
      log.info(`trust key ${k.kid} expired and was removed`)
    }
    if (made && created) {
      this.keys.set(made.name, made.key)
      log.info(`trust key ${made.key.kid} created (${plan.create!.why}): signs from ${made.key.notBefore}, valid until ${made.key.notAfter}`)
    } else if (made) {
      // Another Platform made the key for this start time first: use its key.
      const theirs = JSON.parse((await this.vault.get(made.name)) ?? 'null') as StoredKey | null
      if (!isStoredKey(theirs)) throw new Error(`trust key ${made.name} is unreadable`)
      this.keys.set(made.name, theirs)
    }
    await this.schedule.changed()
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
    const name = nameFor(c)
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

  /** When the signing key hands over to its successor (ms), for the metrics. */
  rotationAt(): number | undefined {
    return rotationAt([...this.keys.values()], this.now())
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
