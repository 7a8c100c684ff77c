// Node credentials (docs/security.md): mnc_<name>.<generation>.<mac>, never stored. The
// mac is HMAC-SHA256 under a key derived from master.key, over the name, the
// node's certificate SHA-256 and the generation.
import { createHmac } from 'node:crypto'
import { deriveKey, safeEqual } from '../crypto/tokens.ts'

const CREDENTIAL = /^mnc_([a-z0-9][a-z0-9-]{0,62})\.(\d{1,9})\.([A-Za-z0-9_-]{43})$/
export const PREVIOUS_GENERATION_GRACE_MS = 3600_000

export interface ParsedCredential {
  name: string
  generation: number
  mac: string
}

export function parseCredential(token: string): ParsedCredential | null {
  const m = CREDENTIAL.exec(token)
  return m ? { name: m[1]!, generation: Number(m[2]), mac: m[3]! } : null
}

export class NodeCredentials {
  private readonly key: Buffer

  constructor(masterKey: Uint8Array) {
    this.key = Buffer.from(deriveKey(masterKey, 'muster node credential v1'))
  }

  /** The mac of a credential (the heartbeat path caches it per node: src/fabric/heartbeat.ts). */
  mac(name: string, certSha256: string, generation: number): string {
    return createHmac('sha256', this.key).update(`${name}\n${certSha256}\n${generation}`).digest('base64url')
  }

  issue(name: string, certSha256: string, generation: number): string {
    return `mnc_${name}.${generation}.${this.mac(name, certSha256, generation)}`
  }

  /** True when the mac matches this node's certificate and the given generation. */
  verify(c: ParsedCredential, certSha256: string): boolean {
    return safeEqual(c.mac, this.mac(c.name, certSha256, c.generation))
  }
}
