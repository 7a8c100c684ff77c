// The Platform's Ed25519 trust keys (SPEC §4): each signs for 365 days; 30
// days before it expires a new key takes over signing, while the old one stays
// in the published set until it expires. Kept as 0600 files in platform/trust/.
import { readdirSync, unlinkSync } from 'node:fs'
import type { DataDir } from '../datadir.ts'
import { generateSigningKey, signDomain } from '../crypto/ed25519.ts'
import { b64url, fromB64url, sha256Hex } from '../crypto/tokens.ts'
import { log } from '../log.ts'

export const KEY_LIFETIME_MS = 365 * 86400_000
export const HANDOVER_MS = 30 * 86400_000
const DIR = 'platform/trust'

export interface TrustKey {
  kid: string
  publicKey: string
  notBefore: string
  notAfter: string
}

interface StoredKey extends TrustKey {
  privateKey: string
}

export class TrustKeys {
  private keys: StoredKey[] = []

  constructor(
    private readonly dataDir: DataDir,
    private readonly now: () => number,
  ) {
    this.load()
    this.ensure()
  }

  private load(): void {
    this.dataDir.ensureDir(DIR)
    this.keys = []
    for (const f of readdirSync(this.dataDir.path(DIR))) {
      if (!f.endsWith('.json')) continue
      const text = this.dataDir.readSecretText(`${DIR}/${f}`)
      if (text) this.keys.push(JSON.parse(text) as StoredKey)
    }
    this.keys.sort((a, b) => Date.parse(a.notBefore) - Date.parse(b.notBefore))
  }

  /** Creates the next key when no key has more than 30 days left; drops expired ones. */
  ensure(): void {
    const now = this.now()
    for (const k of this.keys.filter((k) => Date.parse(k.notAfter) <= now)) {
      try {
        unlinkSync(this.dataDir.path(DIR, `${k.kid}.json`))
      } catch {}
      log.info(`trust key ${k.kid} expired and was removed`)
    }
    this.keys = this.keys.filter((k) => Date.parse(k.notAfter) > now)
    if (this.keys.some((k) => Date.parse(k.notAfter) - now > HANDOVER_MS)) return
    const { privateKey, publicKey } = generateSigningKey()
    const key: StoredKey = {
      kid: sha256Hex(publicKey).slice(0, 16),
      publicKey: b64url(publicKey),
      privateKey: b64url(privateKey),
      notBefore: new Date(now).toISOString(),
      notAfter: new Date(now + KEY_LIFETIME_MS).toISOString(),
    }
    this.dataDir.writeSecret(`${DIR}/${key.kid}.json`, JSON.stringify(key))
    this.keys.push(key)
    log.info(`trust key ${key.kid} now signs (valid until ${key.notAfter})`)
  }

  /** The published set: every key not yet expired (public halves only). */
  published(): TrustKey[] {
    this.ensure()
    return this.keys.map(({ kid, publicKey, notBefore, notAfter }) => ({ kid, publicKey, notBefore, notAfter }))
  }

  /** Signs with the newest key. */
  sign(domain: string, message: string | Uint8Array): { kid: string; signature: string } {
    this.ensure()
    const key = this.keys[this.keys.length - 1]!
    return { kid: key.kid, signature: b64url(signDomain(domain, fromB64url(key.privateKey), message)) }
  }
}
