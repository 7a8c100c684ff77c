// Releases on the Platform (docs/upgrading.md): the operator's signed
// manifest and its binary (uploaded compressed, in parts), checked before
// anything is kept; the release public keys — the first one, and keys a held
// one endorsed — which nodes receive with their trust keys. The Platform never
// sees a release private key: it cannot sign a release, and nodes check every
// manifest themselves.
import { createHash } from 'node:crypto'
import { createZstdDecompress, constants as Z } from 'node:zlib'
import type { Context } from '../context/context.ts'
import { randomId } from '../crypto/tokens.ts'
import { MusterError } from '../errors.ts'
import { log } from '../log.ts'
import { endorsementValid, isReleaseKey, MAX_RELEASE_BYTES, verifyManifest, type ReleaseKey, type SignedManifest } from '../signed/releases.ts'
import { appendBlobPart, beginBlob, blobInfo, blobPart, completeBlob, deleteBlob, dropStaleUploads, insertRelease, insertReleaseKey, listReleases, releaseBySha, releaseKeys, renameBlob, type ReleaseKeyRow, type ReleaseRow } from '../store/releases.ts'
import type { AddRelease, ReleaseKeyView, ReleaseList, ReleaseView } from '../wire/releases.ts'
import { Deltas } from './deltas.ts'

/** Each uploaded part is at most this big (the API takes bodies up to 1 MiB). */
export const PART_BYTES = 768 * 1024
const UPLOAD_TTL_MS = 86_400_000

export const fullBlob = (sha256: string) => `full:${sha256}`

export function releaseView(r: ReleaseRow): ReleaseView {
  let mirrors: string[] = []
  try {
    mirrors = JSON.parse(r.mirrors) as string[]
  } catch {}
  return { version: r.version, sequence: r.sequence, arch: r.arch, sha256: r.sha256, size: r.size, compressedSize: r.compressed_size, kid: r.kid, mirrors, addedAt: new Date(r.added_at).toISOString(), addedBy: r.added_by }
}

const keyView = (k: ReleaseKeyRow): ReleaseKeyView => ({ kid: k.kid, publicKey: k.public_key, endorsedBy: k.endorsed_by, addedAt: new Date(k.added_at).toISOString() })

export const signedOf = (r: ReleaseRow): SignedManifest => ({ manifest: { version: r.version, arch: r.arch as 'x64', sha256: r.sha256, size: r.size, sequence: r.sequence }, kid: r.kid, signature: r.signature })

export class Releases {
  /** The public keys nodes receive (read again on a change notice). */
  private keys: ReleaseKey[] = []
  readonly deltas: Deltas

  constructor(private readonly ctx: Context) {
    this.deltas = new Deltas(ctx)
  }

  async start(): Promise<void> {
    await this.reloadKeys()
    this.ctx.changes.on('releases', () => void this.reloadKeys().catch((e) => log.warn(`release keys: ${(e as Error).message}`)))
    const prune = setInterval(() => void dropStaleUploads(this.ctx.store, this.ctx.now() - UPLOAD_TTL_MS).catch(() => {}), 3_600_000)
    prune.unref?.()
    this.ctx.onClose(() => clearInterval(prune))
  }

  private async reloadKeys(): Promise<void> {
    this.keys = (await releaseKeys(this.ctx.store)).map((k) => ({ kid: k.kid, publicKey: k.public_key, ...(k.endorsed_by && k.signature ? { endorsedBy: k.endorsed_by, signature: k.signature } : {}) }))
  }

  /** What nodes are told with their trust keys. */
  publicKeys(): ReleaseKey[] {
    return this.keys
  }

  async list(): Promise<ReleaseList> {
    const [rows, keys] = await Promise.all([listReleases(this.ctx.store), releaseKeys(this.ctx.store)])
    return { releases: rows.map(releaseView), keys: keys.map(keyView) }
  }

  async startUpload(): Promise<{ upload: string; partBytes: number }> {
    const upload = randomId(16)
    await beginBlob(this.ctx.store, `upload:${upload}`, this.ctx.now())
    return { upload, partBytes: PART_BYTES }
  }

  async uploadPart(upload: string, part: number, data: Uint8Array): Promise<{ parts: number; bytes: number }> {
    if (!/^[a-z2-7]{16}$/.test(upload)) throw new MusterError('not-found', 'No such upload.')
    if (data.byteLength === 0 || data.byteLength > PART_BYTES) throw new MusterError('invalid-request', `A part holds 1 to ${PART_BYTES} bytes.`)
    const id = `upload:${upload}`
    if (part * PART_BYTES >= MAX_RELEASE_BYTES) throw new MusterError('payload-too-large', `A release is at most ${MAX_RELEASE_BYTES} bytes.`)
    if (!(await appendBlobPart(this.ctx.store, id, part, data))) {
      const info = await blobInfo(this.ctx.store, id)
      if (!info) throw new MusterError('not-found', `No upload ${upload} (it expires a day after it began).`)
      throw new MusterError('conflict', `Upload ${upload} expects part ${info.parts} next, not ${part}.`)
    }
    const info = (await blobInfo(this.ctx.store, id))!
    return { parts: info.parts, bytes: info.size }
  }

  /**
   * Takes a public key the operator names: the first key on a Platform that
   * has none; else one it holds, or one endorsed by one it holds.
   */
  private async admitKey(key: unknown, by: string): Promise<ReleaseKey> {
    if (!isReleaseKey(key)) throw new MusterError('invalid-request', 'The release key is malformed (its kid must be the SHA-256 of its public key).')
    const held = await releaseKeys(this.ctx.store)
    if (held.some((k) => k.kid === key.kid)) return key
    if (held.length > 0) {
      const endorser = held.find((k) => k.kid === key.endorsedBy)
      if (!endorser || !endorsementValid(key, { kid: endorser.kid, publicKey: endorser.public_key })) {
        throw new MusterError('forbidden', `Release key ${key.kid} is not one this Platform's nodes trust: endorse it with a key they hold (muster releases endorse-key NEW.key --key OLD.key), then add the release again.`)
      }
    } else if (key.endorsedBy !== undefined) {
      throw new MusterError('invalid-request', `Release key ${key.kid} is endorsed by ${key.endorsedBy}, which this Platform does not hold: add a release signed with that key first.`)
    }
    await insertReleaseKey(this.ctx.store, { kid: key.kid, public_key: key.publicKey, endorsed_by: key.endorsedBy ?? null, signature: key.signature ?? null, added_at: this.ctx.now(), added_by: by })
    await this.ctx.changes.publish('releases')
    await this.reloadKeys()
    log.info(`release key ${key.kid} added${key.endorsedBy ? ` (endorsed by ${key.endorsedBy})` : ' (the first)'} by ${by}`)
    return key
  }

  async addKey(key: unknown, by: string): Promise<ReleaseKeyView> {
    const k = await this.admitKey(key, by)
    const row = (await releaseKeys(this.ctx.store)).find((r) => r.kid === k.kid)!
    return keyView(row)
  }

  /** Checks the signed manifest and the uploaded binary against it, then keeps the release. */
  async addRelease(b: AddRelease, by: string): Promise<ReleaseView> {
    const signer = await this.admitKey(b.key, by)
    const checked = verifyManifest(b.release, [signer])
    if (!checked.ok) throw new MusterError('invalid-request', `The release was refused: ${checked.reason}.`)
    const m = checked.value.manifest
    if (await releaseBySha(this.ctx.store, m.sha256)) throw new MusterError('conflict', `That binary (sha256 ${m.sha256.slice(0, 16)}…) is released already: \`muster releases list\`.`)
    const id = `upload:${b.upload}`
    const info = await blobInfo(this.ctx.store, id)
    if (!info || info.parts === 0) throw new MusterError('not-found', `No upload ${b.upload} with parts in it.`)
    // The upload must be the signed binary, compressed: decompress it whole and compare.
    const got = await this.digestBlob(id, info.parts)
    if (got.size !== m.size || got.sha256 !== m.sha256) {
      await deleteBlob(this.ctx.store, id)
      throw new MusterError('invalid-request', `The uploaded binary is not the one the manifest names (${got.size} bytes, sha256 ${got.sha256.slice(0, 16)}…; the manifest says ${m.size} bytes, ${m.sha256.slice(0, 16)}…).`)
    }
    await completeBlob(this.ctx.store, id)
    const row: ReleaseRow = { sha256: m.sha256, version: m.version, arch: m.arch, size: m.size, sequence: m.sequence, kid: checked.value.kid, signature: checked.value.signature, mirrors: JSON.stringify(b.mirrors ?? []), compressed_size: info.size, added_at: this.ctx.now(), added_by: by }
    try {
      await this.ctx.store.tx(async (t) => {
        await insertRelease(t, row)
        await renameBlob(t, id, fullBlob(m.sha256))
      })
    } catch (e) {
      if ((await listReleases(this.ctx.store)).some((r) => r.sequence === m.sequence)) throw new MusterError('conflict', `Sequence ${m.sequence} is taken by another release: sign it again with a higher one (releases add picks the next by itself).`)
      throw e
    }
    await this.ctx.changes.publish('releases')
    log.info(`release ${m.version} (${m.arch}, sequence ${m.sequence}, ${m.size} bytes) added by ${by}`)
    return releaseView(row)
  }

  /** Size and SHA-256 of a stored blob once decompressed. */
  private async digestBlob(id: string, parts: number): Promise<{ size: number; sha256: string }> {
    const hash = createHash('sha256')
    const digest = (c: Uint8Array) => hash.update(c)
    let size = 0
    const d = createZstdDecompress({ params: { [Z.ZSTD_d_windowLogMax]: 31 } } as never)
    d.on('data', (c: Buffer) => {
      size += c.length
      digest(c)
    })
    const ended = new Promise<void>((resolve, reject) => {
      d.on('end', resolve)
      d.on('error', reject)
    })
    try {
      for (let i = 0; i < parts; i++) {
        const part = await blobPart(this.ctx.store, id, i)
        if (!part) throw new Error(`part ${i} is missing`)
        if (!d.write(part)) await new Promise<void>((r) => d.once('drain', () => r()))
      }
      d.end()
      await ended
    } catch (e) {
      d.destroy()
      await deleteBlob(this.ctx.store, id)
      throw new MusterError('invalid-request', `The upload is not a zstd-compressed binary (${(e as Error).message}); \`muster releases add\` compresses it.`)
    }
    return { size, sha256: hash.digest('hex') }
  }

  /** The release with this binary, if any. */
  release(sha256: string): Promise<ReleaseRow | null> {
    return releaseBySha(this.ctx.store, sha256)
  }

  /** A stored blob as a stream of its parts. */
  streamBlob(id: string, parts: number): ReadableStream<Uint8Array> {
    const db = this.ctx.store
    let i = 0
    return new ReadableStream<Uint8Array>({
      async pull(c) {
        if (i >= parts) return c.close()
        const part = await blobPart(db, id, i++)
        if (!part) return c.error(new Error(`part ${i - 1} of ${id} is missing`))
        c.enqueue(part)
      },
    })
  }

  /**
   * What a node downloads for `sha256`: a delta against `from` when this
   * Platform holds that release and can make one, else the compressed binary.
   */
  async download(sha256: string, from: string | undefined): Promise<Response> {
    const r = await releaseBySha(this.ctx.store, sha256)
    if (!r) throw new MusterError('not-found', 'No such release.')
    if (from && from !== sha256 && (await releaseBySha(this.ctx.store, from))) {
      const delta = await this.deltas.get(from, sha256).catch((e) => {
        log.warn(`release delta ${from.slice(0, 12)}→${sha256.slice(0, 12)}: ${(e as Error).message}; sending the whole binary`)
        return null
      })
      if (delta) return new Response(delta as Uint8Array<ArrayBuffer>, { headers: { 'content-type': 'application/octet-stream', 'x-muster-encoding': 'zstd-delta', 'x-muster-delta-from': from, 'content-length': String(delta.byteLength) } })
    }
    const info = await blobInfo(this.ctx.store, fullBlob(sha256))
    if (!info) throw new MusterError('not-found', 'That release has no binary stored.')
    return new Response(this.streamBlob(fullBlob(sha256), info.parts), { headers: { 'content-type': 'application/octet-stream', 'x-muster-encoding': 'zstd', 'content-length': String(info.size) } })
  }
}
