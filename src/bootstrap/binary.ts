// The muster binary a new machine downloads from its Platform: the running
// executable's own image (/proc/self/exe, which stays what this process runs
// even when the file on disk is replaced for an upgrade), when it is a compiled
// muster and not `bun` running the sources.
import { existsSync } from 'node:fs'
import { ownExecutable } from '../cloud/binary.ts'

export function servedBinary(): string | null {
  if (!ownExecutable()) return null
  return existsSync('/proc/self/exe') ? '/proc/self/exe' : process.execPath
}

let sha: Promise<string> | undefined

/** SHA-256 of the served binary, computed once (the image does not change while the process runs). */
export function servedBinarySha256(path: string): Promise<string> {
  sha ??= (async () => {
    const h = new Bun.CryptoHasher('sha256')
    for await (const chunk of Bun.file(path).stream()) h.update(chunk)
    return h.digest('hex')
  })()
  return sha
}
