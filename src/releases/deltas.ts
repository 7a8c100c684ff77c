// Deltas between releases (docs/upgrading.md "Cheap to distribute"): a node
// that runs a release this Platform still holds downloads the new binary as a
// zstd patch against the one it runs (`zstd --patch-from`; a code-only change
// of the ~116 MB binary is tens of kilobytes), decoded on the node by the
// runtime's own zstd with the running binary as dictionary. Each delta is made
// once (per Platform at most, on a first request or when a rollout starts),
// kept in the store for the others, and in memory here. Bun's zstd binding
// cannot make such deltas (a large dictionary is matched only within its
// window), so the Platform runs the `zstd` program; without it nodes get the
// compressed binary.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { createZstdDecompress, constants as Z } from 'node:zlib'
import type { Context } from '../context/context.ts'
import { log } from '../log.ts'
import { SingleFlight } from '../single-flight.ts'
import { appendBlobPart, beginBlob, blobInfo, blobPart, completeBlob } from '../store/releases.ts'

const PART = 768 * 1024
const MAX_CACHED = 64

const deltaBlob = (from: string, to: string) => `delta:${from}:${to}`

export class Deltas {
  private readonly cache = new Map<string, Uint8Array>()
  private readonly making = new Map<string, SingleFlight<Uint8Array>>()
  private warned = false

  constructor(private readonly ctx: Context) {}

  /** The delta from release `from` to release `to` (made now if no Platform made it yet). */
  async get(from: string, to: string): Promise<Uint8Array> {
    const key = deltaBlob(from, to)
    const hit = this.cache.get(key)
    if (hit) return hit
    let flight = this.making.get(key)
    if (!flight) {
      flight = new SingleFlight<Uint8Array>()
      this.making.set(key, flight)
    }
    try {
      return await flight.run(async () => {
        const bytes = (await this.read(key)) ?? (await this.make(from, to, key))
        if (this.cache.size >= MAX_CACHED) this.cache.delete(this.cache.keys().next().value!)
        this.cache.set(key, bytes)
        return bytes
      })
    } finally {
      this.making.delete(key)
    }
  }

  private async read(key: string): Promise<Uint8Array | null> {
    const info = await blobInfo(this.ctx.store, key)
    if (!info?.complete) return null
    const parts: Uint8Array[] = []
    for (let i = 0; i < info.parts; i++) {
      const p = await blobPart(this.ctx.store, key, i)
      if (!p) return null
      parts.push(p)
    }
    return Buffer.concat(parts)
  }

  /** Decompresses a stored release into `file`. */
  private async unpack(sha256: string, file: string): Promise<void> {
    const id = `full:${sha256}`
    const info = await blobInfo(this.ctx.store, id)
    if (!info) throw new Error(`release ${sha256.slice(0, 12)} has no stored binary`)
    const out = Bun.file(file).writer()
    const d = createZstdDecompress({ params: { [Z.ZSTD_d_windowLogMax]: 31 } } as never)
    d.on('data', (c: Buffer) => void out.write(c))
    const ended = new Promise<void>((resolve, reject) => {
      d.on('end', resolve)
      d.on('error', reject)
    })
    for (let i = 0; i < info.parts; i++) {
      const p = await blobPart(this.ctx.store, id, i)
      if (!p) throw new Error(`part ${i} of ${id} is missing`)
      if (!d.write(p)) await new Promise<void>((r) => d.once('drain', () => r()))
    }
    d.end()
    await ended
    await out.end()
  }

  private async make(from: string, to: string, key: string): Promise<Uint8Array> {
    const zstd = Bun.which('zstd')
    if (!zstd) {
      if (!this.warned) log.warn('release deltas: the `zstd` program is not installed on this Platform (Debian: apt-get install zstd), so nodes download whole compressed binaries')
      this.warned = true
      throw new Error('no zstd program')
    }
    const dir = mkdtempSync(join(this.ctx.dataDir.ensureDir('platform', 'tmp'), 'delta-'))
    try {
      const [base, next, out] = [join(dir, 'base'), join(dir, 'new'), join(dir, 'delta.zst')]
      await Promise.all([this.unpack(from, base), this.unpack(to, next)])
      const started = performance.now()
      const p = Bun.spawn([zstd, '-q', '-f', '-3', '--single-thread', `--patch-from=${base}`, next, '-o', out], { stdout: 'ignore', stderr: 'pipe' })
      const [code, err] = [await p.exited, await new Response(p.stderr).text()]
      if (code !== 0) throw new Error(`zstd exited ${code}: ${err.trim().slice(0, 300)}`)
      const bytes = new Uint8Array(readFileSync(out))
      log.info(`release delta ${from.slice(0, 12)}→${to.slice(0, 12)}: ${bytes.byteLength} bytes in ${Math.round(performance.now() - started)} ms`)
      await beginBlob(this.ctx.store, key, this.ctx.now())
      for (let i = 0, part = 0; i < bytes.byteLength; i += PART, part++) await appendBlobPart(this.ctx.store, key, part, bytes.subarray(i, i + PART))
      await completeBlob(this.ctx.store, key)
      return bytes
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  }
}
