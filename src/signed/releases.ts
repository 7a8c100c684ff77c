// What release keys sign (docs/upgrading.md), checked the same way on the
// operator's machine, the Platform and the node:
// - a release manifest {version, arch, sha256, size, sequence}, signed with a
//   release key the operator holds (the Platform keeps only public halves);
// - a release key endorsement: a new release key signed by one already held,
//   the only way a node takes a second key.
// The rollout directive is a trust-key document (src/signed/documents.ts).
// Every signature covers a domain string naming its purpose and version
// (src/crypto/ed25519.ts), so none verifies as another.
import { canonicalJson, generateSigningKey, publicKeyFromPrivate, signDomain, verifyDomain } from '../crypto/ed25519.ts'
import { b64url, fromB64url, sha256Hex } from '../crypto/tokens.ts'
import { ARCHES, type Manifest, type ReleaseKey, type SignedManifest } from '../wire/releases.ts'

export type { Arch, Manifest, ReleaseKey, SignedManifest } from '../wire/releases.ts'

export const MANIFEST_DOMAIN = 'muster release manifest v1'
export const ENDORSEMENT_DOMAIN = 'muster release key endorsement v1'


const KID = /^[0-9a-f]{16}$/
const B64URL_32 = /^[A-Za-z0-9_-]{43}$/
const SIG = /^[A-Za-z0-9_-]{86}$/
const SHA256 = /^[0-9a-f]{64}$/
const VERSION = /^\d{1,6}\.\d{1,6}\.\d{1,6}([-+][0-9A-Za-z.-]{1,64})?$/
/** The largest binary a release may name (the Platform's own is about 116 MB). */
export const MAX_RELEASE_BYTES = 512 * 1024 * 1024

/** The operator's key file (0600), as `muster releases keygen` writes it. */
export interface ReleaseKeyFile {
  kind: 'muster-release-key'
  kid: string
  publicKey: string
  privateKey: string
  createdAt: string
}

export const kidOf = (publicKey: Uint8Array): string => sha256Hex(publicKey).slice(0, 16)

export function newReleaseKey(now = Date.now()): ReleaseKeyFile {
  const k = generateSigningKey()
  return { kind: 'muster-release-key', kid: kidOf(k.publicKey), publicKey: b64url(k.publicKey), privateKey: b64url(k.privateKey), createdAt: new Date(now).toISOString() }
}

/** A key file's contents, checked (its public half must be the private half's). */
export function parseReleaseKeyFile(text: string): ReleaseKeyFile {
  let k: Partial<ReleaseKeyFile>
  try {
    k = JSON.parse(text) as Partial<ReleaseKeyFile>
  } catch {
    throw new Error('not a release key file (not JSON)')
  }
  if (k?.kind !== 'muster-release-key' || typeof k.privateKey !== 'string' || !B64URL_32.test(k.privateKey)) throw new Error('not a release key file (made by `muster releases keygen`)')
  const publicKey = publicKeyFromPrivate(fromB64url(k.privateKey))
  if (b64url(publicKey) !== k.publicKey || kidOf(publicKey) !== k.kid) throw new Error('the release key file is damaged: its public key does not match its private key')
  return k as ReleaseKeyFile
}

export function isManifest(m: unknown): m is Manifest {
  const x = m as Partial<Manifest> | null
  return (
    !!x &&
    typeof x === 'object' &&
    Object.entries(x).length === 5 &&
    typeof x.version === 'string' &&
    VERSION.test(x.version) &&
    (ARCHES as readonly string[]).includes(x.arch as string) &&
    typeof x.sha256 === 'string' &&
    SHA256.test(x.sha256) &&
    Number.isSafeInteger(x.size) &&
    x.size! > 0 &&
    x.size! <= MAX_RELEASE_BYTES &&
    Number.isSafeInteger(x.sequence) &&
    x.sequence! >= 1
  )
}

export function signManifest(key: ReleaseKeyFile, manifest: Manifest): SignedManifest {
  if (!isManifest(manifest)) throw new TypeError('not a manifest')
  return { manifest, kid: key.kid, signature: b64url(signDomain(MANIFEST_DOMAIN, fromB64url(key.privateKey), canonicalJson(manifest))) }
}

export type Check<T> = { ok: true; value: T } | { ok: false; reason: string }

/** A signed manifest that verifies under one of `keys`; else why not. */
export function verifyManifest(doc: unknown, keys: readonly ReleaseKey[]): Check<SignedManifest> {
  const d = doc as Partial<SignedManifest> | null
  if (!d || typeof d !== 'object' || !isManifest(d.manifest) || typeof d.kid !== 'string' || typeof d.signature !== 'string' || !SIG.test(d.signature)) return { ok: false, reason: 'the release manifest is malformed' }
  const key = keys.find((k) => k.kid === d.kid)
  if (!key) return { ok: false, reason: `the release manifest is signed by release key ${KID.test(d.kid) ? d.kid : '(malformed)'}, which this node does not trust` }
  if (!verifyDomain(MANIFEST_DOMAIN, fromB64url(key.publicKey), canonicalJson(d.manifest), fromB64url(d.signature))) return { ok: false, reason: `the release manifest's signature by ${key.kid} does not verify` }
  return { ok: true, value: { manifest: d.manifest, kid: d.kid, signature: d.signature } }
}

const endorsementBytes = (k: { kid: string; publicKey: string }) => canonicalJson({ kid: k.kid, publicKey: k.publicKey })

/** `newKey` endorsed by `by`: nodes holding `by` take `newKey` too. */
export function endorseKey(by: ReleaseKeyFile, newKey: { kid: string; publicKey: string }): ReleaseKey {
  return { kid: newKey.kid, publicKey: newKey.publicKey, endorsedBy: by.kid, signature: b64url(signDomain(ENDORSEMENT_DOMAIN, fromB64url(by.privateKey), endorsementBytes(newKey))) }
}

/** A public key of the right shape whose kid is its own. */
export function isReleaseKey(k: unknown): k is ReleaseKey {
  const x = k as Partial<ReleaseKey> | null
  if (!x || typeof x !== 'object' || typeof x.kid !== 'string' || !KID.test(x.kid) || typeof x.publicKey !== 'string' || !B64URL_32.test(x.publicKey)) return false
  if (kidOf(fromB64url(x.publicKey)) !== x.kid) return false
  if (x.endorsedBy === undefined && x.signature === undefined) return true
  return typeof x.endorsedBy === 'string' && KID.test(x.endorsedBy) && typeof x.signature === 'string' && SIG.test(x.signature)
}

/** Whether `k`'s endorsement verifies under `endorser`. */
export function endorsementValid(k: ReleaseKey, endorser: ReleaseKey): boolean {
  return k.endorsedBy === endorser.kid && typeof k.signature === 'string' && verifyDomain(ENDORSEMENT_DOMAIN, fromB64url(endorser.publicKey), endorsementBytes(k), fromB64url(k.signature))
}

/**
 * The keys a node holds after hearing `offered`: every held key stays (a
 * Platform cannot make a node forget one), an offered key joins only when a
 * held key (or one that joined this way) endorsed it. A node that holds none
 * takes the offered keys nobody endorsed — the first key, on first use, over
 * the connection its pin authenticated (docs/upgrading.md) — and what they endorse.
 */
export function acceptReleaseKeys(held: readonly ReleaseKey[], offered: unknown): { keys: ReleaseKey[]; added: string[]; refused: string[] } {
  const list = Array.isArray(offered) ? offered.slice(0, 64).filter(isReleaseKey) : []
  const keys = [...held]
  const has = (kid: string) => keys.some((k) => k.kid === kid)
  const added: string[] = []
  if (keys.length === 0) {
    for (const k of list) if (k.endorsedBy === undefined && !has(k.kid)) (keys.push({ kid: k.kid, publicKey: k.publicKey }), added.push(k.kid))
  }
  for (let changed = true; changed; ) {
    changed = false
    for (const k of list) {
      if (has(k.kid) || k.endorsedBy === undefined) continue
      const endorser = keys.find((h) => h.kid === k.endorsedBy)
      if (endorser && endorsementValid(k, endorser)) {
        keys.push(k)
        added.push(k.kid)
        changed = true
      }
    }
  }
  const refused = list.filter((k) => !has(k.kid)).map((k) => k.kid)
  return { keys, added, refused }
}
