// Reads a release key file (refused when group or others can read it).
import { UsageError } from '../_args.ts'

export async function readKeyFile(path: string) {
  const { existsSync, readFileSync } = await import('node:fs')
  if (!existsSync(path)) throw new UsageError(`${path}: no such release key file (make one with muster releases keygen --out ${path})`)
  const { assertPrivate } = await import('../../src/datadir.ts')
  assertPrivate(path)
  const { parseReleaseKeyFile } = await import('../../src/signed/releases.ts')
  try {
    return parseReleaseKeyFile(readFileSync(path, 'utf8'))
  } catch (e) {
    throw new UsageError(`${path}: ${(e as Error).message}`)
  }
}
