// The signed documents of fleet upgrades (docs/upgrading.md), checked the same
// way on the operator's machine, the Platform and the node:
// - a release manifest {version, arch, sha256, size, sequence}, signed with a
//   release key the operator holds (the Platform keeps only public halves);
// - a release key endorsement: a new release key signed by one already held,
//   the only way a node takes a second key;
// - a rollout directive: "install this release now", signed with the
//   Platform's trust keys, for one node, valid a few minutes.
// Every signature covers a domain string naming its purpose and version
// (src/crypto/ed25519.ts), so none verifies as another.
import { canonicalJson, generateSigningKey, publicKeyFromPrivate, signDomain, verifyDomain } from '../crypto/ed25519.ts'
import { b64url, fromB64url, sha256Hex } from '../crypto/tokens.ts'
import { ARCHES, type Directive, type Manifest, type ReleaseKey, type SignedDirective, type SignedManifest } from '../wire/releases.ts'

export type { Arch, Directive, Manifest, ReleaseKey, SignedDirective, SignedManifest } from '../wire/releases.ts'

export const MANIFEST_DOMAIN = 'muster release manifest v1'
export const ENDORSEMENT_DOMAIN = 'muster release key endorsement v1'
export const DIRECTIVE_DOMAIN = 'muster rollout directive v1'

/** A directive lives at most this long (the Platform issues them for less). */
export const MAX_DIRECTIVE_MS = 15 * 60_000
/** Clock skew allowed between a Platform and a node. */
export const DIRECTIVE_SKEW_MS = 5 * 60_000


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

// ---- rollout directives (trust keys) ------------------------------------------

export interface TrustKeyLike {
  kid: string
  publicKey: string
  notBefore: string
  notAfter: string
}

export type TrustSigner = (domain: string, message: string) => { kid: string; signature: string }

export function signDirective(sign: TrustSigner, directive: Directive): SignedDirective {
  const { kid, signature } = sign(DIRECTIVE_DOMAIN, canonicalJson(directive))
  return { directive, kid, signature }
}

/** `unknownKey`: signed by a kid not among the keys valid now (a trust refresh may help). */
export type DirectiveCheck = { ok: true; directive: Directive } | { ok: false; reason: string; unknownKey?: true }

/** A directive signed by a trust key valid now, for `node`, not expired and not issued in the future. */
export function verifyDirective(doc: unknown, trust: readonly TrustKeyLike[], node: string, now: number): DirectiveCheck {
  const d = doc as Partial<SignedDirective> | null
  if (!d || typeof d !== 'object' || !d.directive || typeof d.directive !== 'object' || typeof d.kid !== 'string' || typeof d.signature !== 'string' || !SIG.test(d.signature)) return { ok: false, reason: 'the directive is unsigned or malformed' }
  const key = trust.find((k) => k.kid === d.kid && Date.parse(k.notBefore) <= now && now < Date.parse(k.notAfter))
  if (!key) return { ok: false, reason: 'the directive is signed by a key this node does not hold (or not valid now)', unknownKey: true }
  let bytes: string
  try {
    bytes = canonicalJson(d.directive)
  } catch {
    return { ok: false, reason: 'the directive is malformed' }
  }
  if (!verifyDomain(DIRECTIVE_DOMAIN, fromB64url(key.publicKey), bytes, fromB64url(d.signature))) return { ok: false, reason: 'the directive signature does not verify' }
  const x = d.directive as Partial<Directive>
  if (x.node !== node) return { ok: false, reason: `the directive is for node ${typeof x.node === 'string' ? x.node.slice(0, 63) : '?'}, not ${node}` }
  if (!Number.isSafeInteger(x.issuedAt) || !Number.isSafeInteger(x.expiresAt) || x.expiresAt! <= x.issuedAt! || x.expiresAt! - x.issuedAt! > MAX_DIRECTIVE_MS) return { ok: false, reason: 'the directive has no valid lifetime' }
  if (x.issuedAt! > now + DIRECTIVE_SKEW_MS) return { ok: false, reason: 'the directive was issued in the future (check this machine’s clock)' }
  if (now >= x.expiresAt!) return { ok: false, reason: `the directive expired at ${new Date(x.expiresAt!).toISOString()}` }
  if (typeof x.rollout !== 'string' || !/^[a-z2-7]{1,32}$/.test(x.rollout)) return { ok: false, reason: 'the directive names no rollout' }
  if (!Array.isArray(x.mirrors) || x.mirrors.length > 8 || !x.mirrors.every((m) => typeof m === 'string' && m.length <= 2048 && /^https?:\/\//.test(m))) return { ok: false, reason: 'the directive’s mirrors are malformed' }
  if (!Number.isSafeInteger(x.healthTimeoutMs) || x.healthTimeoutMs! < 1000 || x.healthTimeoutMs! > 3_600_000) return { ok: false, reason: 'the directive’s health timeout is malformed' }
  return { ok: true, directive: x as Directive }
}
