// The muster binary this Platform hands to new machines (the bootstrap line's
// download, and a created machine's first boot): the running executable's own
// image, when it is a compiled muster and not `bun` running the sources.
// /proc/self/exe stays the image this process runs even when the file on disk
// is replaced for an upgrade, so the SHA-256 computed once keeps matching what
// is served until this process ends.
import { existsSync } from 'node:fs'

/** True when this process is a compiled muster (not `bun` running sources). */
export function isCompiled(): boolean {
  return import.meta.path.startsWith('/$bunfs/') || Bun.main.startsWith('/$bunfs/')
}

/** The file to serve, or null when this is not a compiled muster. */
export function servedBinary(): string | null {
  if (!isCompiled()) return null
  return existsSync('/proc/self/exe') ? '/proc/self/exe' : process.execPath
}

let sha: Promise<string> | undefined

/** SHA-256 (hex) of the served binary, computed once (the image does not change while the process runs). */
export function servedBinarySha256(path: string): Promise<string> {
  sha ??= (async () => {
    const h = new Bun.CryptoHasher('sha256')
    for await (const chunk of Bun.file(path).stream()) h.update(chunk)
    return h.digest('hex')
  })()
  return sha
}
