// `muster releases add`, on the operator's machine (docs/upgrading.md): what
// the binary is (size, SHA-256, architecture from its ELF header, version from
// `BINARY version --json` when it runs here), the manifest signed with the
// release key that never leaves this machine, the binary compressed with zstd
// and uploaded in parts, then the signed manifest naming the upload.
import { createHash } from 'node:crypto'
import { readFileSync, statSync } from 'node:fs'
import { arch as osArch } from 'node:os'
import type { Client } from '../client/index.ts'
import { MusterError } from '../errors.ts'
import { isManifest, signManifest, type Arch, type Manifest, type ReleaseKeyFile } from '../signed/releases.ts'
import { isVersion } from '../version.ts'
import type { ReleaseView } from '../wire/releases.ts'

/** The architecture an ELF binary is built for (e_machine), or null for anything else. */
export function elfArch(head: Uint8Array): Arch | null {
  if (head.length < 20 || head[0] !== 0x7f || head[1] !== 0x45 || head[2] !== 0x4c || head[3] !== 0x46) return null
  const machine = head[5] === 2 ? (head[18]! << 8) | head[19]! : head[18]! | (head[19]! << 8)
  return machine === 62 ? 'x64' : machine === 183 ? 'arm64' : null
}

/** What `BINARY version --json` says, when it runs on this machine. */
async function versionOf(binary: string): Promise<string | null> {
  try {
    const p = Bun.spawn([binary, 'version', '--json'], { stdout: 'pipe', stderr: 'ignore', stdin: 'ignore', env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: '/nonexistent' } })
    const timer = setTimeout(() => p.kill('SIGKILL'), 10_000)
    const [out, code] = [await new Response(p.stdout).text(), await p.exited]
    clearTimeout(timer)
    const v = code === 0 ? (JSON.parse(out) as { version?: unknown }).version : null
    return typeof v === 'string' && isVersion(v) ? v : null
  } catch {
    return null
  }
}

export interface PublishOptions {
  binary: string
  key: ReleaseKeyFile
  version?: string
  arch?: Arch
  sequence?: number
  mirrors?: string[]
  /** zstd level (1–19): higher is smaller and slower. */
  level?: number
  progress?: (line: string) => void
}

/** The manifest of `binary`, its bytes, and how its facts were found. */
export async function describeBinary(o: Pick<PublishOptions, 'binary' | 'version' | 'arch' | 'sequence'>, nextSequence: () => Promise<number>): Promise<{ manifest: Manifest; bytes: Uint8Array }> {
  let size: number
  try {
    size = statSync(o.binary).size
  } catch (e) {
    throw new MusterError('not-configured', `${o.binary}: ${(e as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (e as Error).message}`)
  }
  if (size === 0) throw new MusterError('invalid-request', `${o.binary} is empty`)
  const bytes = new Uint8Array(readFileSync(o.binary))
  const found = elfArch(bytes.subarray(0, 20))
  const arch = o.arch ?? found
  if (!arch) throw new MusterError('invalid-request', `${o.binary} is not a Linux x64 or arm64 executable; give --arch x64|arm64 if it is a release all the same`)
  if (o.arch && found && o.arch !== found) throw new MusterError('invalid-request', `${o.binary} is built for ${found}, not the --arch ${o.arch} given`)
  let version = o.version
  if (!version) {
    if (arch !== (osArch() === 'arm64' ? 'arm64' : 'x64')) throw new MusterError('invalid-request', `${o.binary} is built for ${arch} and cannot run here to say its version: give --version X.Y.Z`)
    version = (await versionOf(o.binary)) ?? undefined
    if (!version) throw new MusterError('invalid-request', `${o.binary} did not say its version (\`${o.binary} version --json\`): is it muster? Give --version X.Y.Z if it is`)
  }
  const manifest: Manifest = { version, arch, sha256: createHash('sha256').update(bytes).digest('hex'), size, sequence: o.sequence ?? (await nextSequence()) }
  if (!isManifest(manifest)) throw new MusterError('invalid-request', `the release would not be valid (version ${version}, sequence ${String((manifest as Manifest).sequence)}, ${size} bytes)`)
  return { manifest, bytes }
}

/** Signs here, uploads the compressed binary, then the signed manifest. */
export async function publishRelease(client: Client, o: PublishOptions): Promise<ReleaseView> {
  const say = o.progress ?? (() => {})
  const { manifest, bytes } = await describeBinary(o, async () => 1 + Math.max(0, ...(await client.releases.list()).releases.map((r) => r.sequence)))
  const release = signManifest(o.key, manifest)
  say(`release ${manifest.version} (${manifest.arch}, sequence ${manifest.sequence}, sha256 ${manifest.sha256.slice(0, 16)}…) signed with release key ${o.key.kid}`)
  const started = performance.now()
  const packed = new Uint8Array(await Bun.zstdCompress(bytes, { level: o.level ?? 9 } as never))
  say(`compressed ${(bytes.byteLength / 1048576).toFixed(1)} MB to ${(packed.byteLength / 1048576).toFixed(1)} MB in ${((performance.now() - started) / 1000).toFixed(1)} s; uploading`)
  const { upload, partBytes } = await client.releases.startUpload(packed.byteLength)
  for (let off = 0, part = 0; off < packed.byteLength; off += partBytes, part++) await client.releases.uploadPart(upload, part, packed.subarray(off, off + partBytes))
  return client.releases.add({ release, upload, key: { kid: o.key.kid, publicKey: o.key.publicKey }, ...(o.mirrors?.length ? { mirrors: o.mirrors } : {}) })
}
