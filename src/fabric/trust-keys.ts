// The Platform's Ed25519 trust keys (SPEC §4): each signs for 365 days; 30
// days before it expires a new key takes over signing, while the old one stays
// in the published set until it expires. Kept sealed in the vault as
// `trust/<kid>.json`, so every Platform sharing the store signs with the same
// keys (SPEC §16.9).
//
// The schedule (creating the next key, dropping expired ones) is a leader-only
// loop: only the holder of the `trust-keys` lease writes, through fenced
// writes, and tells the others, who reload. The very first key has a fixed
// name, so Platforms starting together on an empty store keep one.
import { generateSigningKey, signDomain } from '../crypto/ed25519.ts'
import { b64url, fromB64url, sha256Hex } from '../crypto/tokens.ts'
import { log } from '../log.ts'
import type { Vault } from '../vault.ts'

export const KEY_LIFETIME_MS = 365 * 86400_000
export const HANDOVER_MS = 30 * 86400_000
const FIRST = 'trust/first.json'

export interface TrustKey {
  kid: string
  publicKey: string
  notBefore: string
  notAfter: string
}

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

const isStoredKey = (k: Partial<StoredKey> | null): k is StoredKey =>
  !!k && typeof k.kid === 'string' && typeof k.publicKey === 'string' && typeof k.privateKey === 'string' && Number.isFinite(Date.parse(k.notBefore ?? '')) && Number.isFinite(Date.parse(k.notAfter ?? ''))

export class TrustKeys {
  private keys: { name: string; key: StoredKey }[] = []
  private ensuring: Promise<void> | undefined

  private constructor(
    private readonly vault: Vault,
    private readonly now: () => number,
    private readonly schedule: TrustSchedule,
  ) {}

  /** Loads the keys; on an empty store makes the first one. */
  static async open(vault: Vault, now: () => number, schedule: TrustSchedule): Promise<TrustKeys> {
    const t = new TrustKeys(vault, now, schedule)
    await t.refresh()
    await t.ensure()
    return t
  }

  /** Reads the keys again from the vault (another Platform changed them). */
  async refresh(): Promise<void> {
    const found: { name: string; key: StoredKey }[] = []
    for (const name of await this.vault.list('trust/')) {
      const k = JSON.parse((await this.vault.get(name)) ?? 'null') as Partial<StoredKey> | null
      if (isStoredKey(k)) found.push({ name, key: k })
      else log.warn(`trust key ${name} is unreadable; ignored`)
    }
    found.sort((a, b) => Date.parse(a.key.notBefore) - Date.parse(b.key.notBefore) || (a.key.kid < b.key.kid ? -1 : 1))
    this.keys = found
  }

  /**
   * Applies the schedule (one run at a time): the lease holder drops expired
   * keys and creates the next one when no key has more than 30 days left. A
   * Platform without any key valid now makes one whatever the lease says.
   */
  ensure(): Promise<void> {
    this.ensuring ??= this.applySchedule().finally(() => (this.ensuring = undefined))
    return this.ensuring
  }

  private live(now = this.now()) {
    return this.keys.filter((k) => Date.parse(k.key.notAfter) > now)
  }

  private async applySchedule(): Promise<void> {
    const now = this.now()
    const live = this.live(now)
    const due = !live.some((k) => Date.parse(k.key.notAfter) - now > HANDOVER_MS)
    if (this.keys.length === 0) {
      // An empty store: Platforms starting together race on one name; the loser takes the winner's key.
      await this.vault.create(FIRST, JSON.stringify(newKey(now)))
      await this.refresh()
      return
    }
    if (!this.schedule.held()) {
      if (live.length > 0) return
      log.warn('no trust key is valid now and this Platform does not run the key schedule: making one so it can sign')
    }
    const expired = this.keys.filter((k) => !live.includes(k))
    if (!due && expired.length === 0) return
    const key = due ? newKey(now) : undefined
    const writeKeys = async (v: Vault) => {
      for (const k of expired) await v.delete(k.name)
      if (key) await v.create(`trust/${key.kid}.json`, JSON.stringify(key))
    }
    await (this.schedule.held() ? this.schedule.fenced(writeKeys) : writeKeys(this.vault))
    for (const k of expired) log.info(`trust key ${k.key.kid} expired and was removed`)
    if (key) log.info(`trust key ${key.kid} now signs (valid until ${key.notAfter})`)
    await this.refresh()
    await this.schedule.changed()
  }

  /** The published set: every key not yet expired (public halves only). */
  published(): TrustKey[] {
    return this.live().map(({ key: { kid, publicKey, notBefore, notAfter } }) => ({ kid, publicKey, notBefore, notAfter }))
  }

  /** Signs with the newest key valid now. */
  sign(domain: string, message: string | Uint8Array): { kid: string; signature: string } {
    const now = this.now()
    const key = this.live(now).filter((k) => Date.parse(k.key.notBefore) <= now).at(-1)?.key
    if (!key) throw new Error('no trust key is valid now')
    return { kid: key.kid, signature: b64url(signDomain(domain, fromB64url(key.privateKey), message)) }
  }
}

function newKey(now: number): StoredKey {
  const { privateKey, publicKey } = generateSigningKey()
  return {
    kid: sha256Hex(publicKey).slice(0, 16),
    publicKey: b64url(publicKey),
    privateKey: b64url(privateKey),
    notBefore: new Date(now).toISOString(),
    notAfter: new Date(now + KEY_LIFETIME_MS).toISOString(),
  }
}
