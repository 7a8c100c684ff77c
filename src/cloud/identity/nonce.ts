// The nonces an Azure machine fetches its attested data with (docs/cloud.md),
// stateless: asking for one is anonymous, so the Platform writes nothing when
// it gives one. A nonce is 32 letters and digits: its expiry (milliseconds,
// base 36), 8 random characters, and a MAC over the node name, the expiry and
// the random part under a key derived from master.key for this purpose alone
// (the Platforms on a store share master.key: any of them checks a nonce
// another gave). A nonce is recorded only by the join that used it, one that
// passed every other check (src/store/cloud-expected.ts takes it once).
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto'

const DOMAIN = 'muster azure identity challenge v1'
const CHARS = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789'
const EXPIRY = 8
const RANDOM = 8
const MAC = 16
const SHAPE = /^[0-9a-z]{8}[0-9A-Za-z]{24}$/

const letters = (bytes: Uint8Array, n: number): string => Array.from(bytes.subarray(0, n), (b) => CHARS[b % CHARS.length]).join('')

export class ChallengeNonces {
  private readonly key: Buffer

  constructor(masterKey: Uint8Array) {
    this.key = createHmac('sha256', masterKey).update(DOMAIN).digest()
  }

  private mac(nodeName: string, expiry: string, random: string): string {
    return letters(createHmac('sha256', this.key).update(`${nodeName}\n${expiry}\n${random}`).digest(), MAC)
  }

  /** A nonce for `nodeName`, good until `expiresAt` (ms). */
  issue(nodeName: string, expiresAt: number): string {
    const expiry = expiresAt.toString(36).padStart(EXPIRY, '0')
    const random = letters(randomBytes(RANDOM), RANDOM)
    return expiry + random + this.mac(nodeName, expiry, random)
  }

  /** When a nonce this Platform gave `nodeName` expires (ms); null for any other string. */
  check(nonce: unknown, nodeName: string): number | null {
    if (typeof nonce !== 'string' || !SHAPE.test(nonce)) return null
    const expiry = nonce.slice(0, EXPIRY)
    const want = Buffer.from(this.mac(nodeName, expiry, nonce.slice(EXPIRY, EXPIRY + RANDOM)))
    if (!timingSafeEqual(want, Buffer.from(nonce.slice(EXPIRY + RANDOM)))) return null
    return parseInt(expiry, 36)
  }
}
