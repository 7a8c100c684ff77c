// Fetching a release onto the node (docs/upgrading.md): from a mirror the
// directive names, else from the Platform over the node's pinned connection —
// compressed, or a delta against the binary this node runs — into a staging
// file beside the versions, checked against the signed manifest (size and
// SHA-256) before it is renamed into versions/<version>-<sequence>/muster.
// Whoever served it, only the manifest decides what is accepted.
import { createHash } from 'node:crypto'
import { chmodSync, closeSync, existsSync, fsyncSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, statSync, writeSync } from 'node:fs'
import { createZstdDecompress, constants as Z } from 'node:zlib'
import { dirname } from 'node:path'
import type { DataDir } from '../../datadir.ts'
import type { Manifest } from '../../signed/releases.ts'
import { releaseBinary, releaseDir, VERSIONS_DIR } from './journal.ts'

const ZSTD_MAGIC = [0x28, 0xb5, 0x2f, 0xfd]
/** A download that sends nothing for this long is given up. */
const STALL_MS = 60_000

export interface Source {
  /** For messages: a mirror's URL or "the Platform". */
  label: string
  fetch(signal: AbortSignal): Promise<Response>
}

export class FetchError extends Error {}

function fsyncPath(path: string): void {
  try {
    const fd = openSync(path, 'r')
    try {
      fsyncSync(fd)
    } finally {
      closeSync(fd)
    }
  } catch {}
}

/** SHA-256 of a file, streamed. */
export async function fileSha256(path: string): Promise<string> {
  const h = createHash('sha256')
  for await (const chunk of Bun.file(path).stream()) h.update(chunk)
  return h.digest('hex')
}

/** The release's binary when it is already in place and whole (a download an earlier Agent finished). */
export async function stagedAlready(dataDir: DataDir, m: Manifest): Promise<string | null> {
  const bin = releaseBinary(dataDir, releaseDir(m))
  try {
    if (statSync(bin).size !== m.size) return null
    return (await fileSha256(bin)) === m.sha256 ? bin : null
  } catch {
    return null
  }
}

/**
 * Streams `res`'s body — raw, zstd, or a zstd delta against `base` — into
 * `file`, hashing what is written; throws FetchError with the reason
 * (a full disk names the folder and what it needs).
 */
async function receive(res: Response, file: string, m: Manifest, base: () => Uint8Array, label: string): Promise<void> {
  if (!res.body) throw new FetchError(`${label} sent no body`)
  const delta = res.headers.get('x-muster-encoding') === 'zstd-delta'
  const hash = createHash('sha256')
  const digest = (c: Uint8Array) => hash.update(c)
  let written = 0
  const fd = openSync(file, 'w', 0o700)
  let failure: Error | undefined
  const write = (chunk: Uint8Array) => {
    if (failure) return
    written += chunk.byteLength
    if (written > m.size) {
      failure = new FetchError(`${label} sent more than the ${m.size} bytes the signed manifest names`)
      return
    }
    try {
      let off = 0
      while (off < chunk.byteLength) off += writeSync(fd, chunk, off, chunk.byteLength - off)
      digest(chunk)
    } catch (e) {
      const err = e as NodeJS.ErrnoException
      failure = err.code === 'ENOSPC' || err.code === 'EDQUOT'
        ? new FetchError(`no space left on the device for the staging file in ${dirname(file)} (the release needs ${Math.ceil(m.size / 1048576)} MB there): free some space; the running version is unchanged`)
        : new FetchError(`cannot write the staging file ${file}: ${err.message}`)
    }
  }
  try {
    const reader = res.body.getReader()
    const first = await reader.read()
    const head = first.value ?? new Uint8Array()
    const zstd = delta || ZSTD_MAGIC.every((b, i) => head[i] === b)
    if (!zstd) {
      if (!first.done) write(head)
      for (;;) {
        if (failure) break
        const { done, value } = await reader.read()
        if (done) break
        write(value)
      }
    } else {
      const d = createZstdDecompress({ ...(delta ? { dictionary: base() } : {}), params: { [Z.ZSTD_d_windowLogMax]: 31 } } as never)
      d.on('data', (c: Buffer) => write(c))
      const ended = new Promise<void>((resolve, reject) => {
        d.on('end', resolve)
        d.on('error', reject)
      })
      const feed = async (chunk: Uint8Array) => {
        if (!d.write(chunk)) await new Promise<void>((r) => d.once('drain', () => r()))
      }
      if (!first.done) await feed(head)
      for (;;) {
        if (failure) break
        const { done, value } = await reader.read()
        if (done) break
        await feed(value)
      }
      if (failure) d.destroy()
      else {
        d.end()
        try {
          await ended
        } catch (e) {
          throw new FetchError(`${label} sent data that does not decompress (${(e as Error).message})`)
        }
      }
    }
    if (failure) {
      void reader.cancel().catch(() => {})
      throw failure
    }
    fsyncSync(fd)
  } finally {
    closeSync(fd)
  }
  if (written !== m.size) throw new FetchError(`${label} sent ${written} bytes, not the ${m.size} the signed manifest names`)
  const got = hash.digest('hex')
  if (got !== m.sha256) throw new FetchError(`${label} sent a binary whose SHA-256 (${got.slice(0, 16)}…) is not the signed manifest's (${m.sha256.slice(0, 16)}…)`)
}

/**
 * Puts the release's binary in versions/<dir>/muster from the first source
 * that serves the signed one; every failure is named. `base`: the binary this
 * node runs, for a delta.
 */
export async function fetchRelease(dataDir: DataDir, m: Manifest, sources: Source[], basePath: string, onSource?: (label: string) => void, onFailure?: (why: string) => void): Promise<string> {
  const done = await stagedAlready(dataDir, m)
  if (done) return done
  const versions = dataDir.ensureDir(VERSIONS_DIR)
  const staging = `${versions}/.staging-${m.sha256.slice(0, 16)}`
  let baseBytes: Uint8Array | undefined
  const base = () => (baseBytes ??= new Uint8Array(readFileSync(basePath)))
  const failures: string[] = []
  for (const s of sources) {
    onSource?.(s.label)
    const abort = new AbortController()
    let stall = setTimeout(() => abort.abort(), STALL_MS)
    try {
      const res = await s.fetch(abort.signal)
      if (res.status !== 200) {
        failures.push(`${s.label} answered ${res.status}`)
        onFailure?.(`${s.label} answered ${res.status}`)
        await res.body?.cancel().catch(() => {})
        continue
      }
      clearTimeout(stall)
      stall = setTimeout(() => abort.abort(), 30 * 60_000)
      await receive(res, staging, m, base, s.label)
      const dir = `${versions}/${releaseDir(m)}`
      mkdirSync(dir, { recursive: true, mode: 0o700 })
      const bin = `${dir}/muster`
      chmodSync(staging, 0o700)
      renameSync(staging, bin)
      fsyncPath(dir)
      fsyncPath(versions)
      return bin
    } catch (e) {
      rmSync(staging, { force: true })
      const msg = e instanceof FetchError ? e.message : `${s.label}: ${(e as Error).message}`
      failures.push(msg)
      onFailure?.(msg)
      // A full disk fails every source alike: say so once.
      if (/no space left/.test(msg)) throw new FetchError(msg)
    } finally {
      clearTimeout(stall)
    }
  }
  if (existsSync(staging)) rmSync(staging, { force: true })
  throw new FetchError(failures.join('; ') || 'no source to fetch the release from')
}
