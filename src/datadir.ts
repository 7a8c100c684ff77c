// The data directory (docs/operations.md): where it is, its 0700 folders and 0600 secret
// files, and the refusal to use a secret that others can read.
import { chmodSync, closeSync, existsSync, fsyncSync, mkdirSync, openSync, readFileSync, renameSync, statSync, writeSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { MusterError } from './errors.ts'
import { TUNABLES, tunable } from './tunables.ts'

export const DEFAULT_DATA_DIR = TUNABLES.MUSTER_DATA_DIR.default

export function resolveDataDir(flag?: string): string {
  return resolve(flag || tunable('MUSTER_DATA_DIR') || DEFAULT_DATA_DIR)
}

/** Refuses a file or folder that group or others can read or write. */
export function assertPrivate(path: string, isDir = false): void {
  const st = statSync(path)
  if ((st.mode & 0o077) !== 0) {
    const want = isDir ? '700' : '600'
    throw new MusterError(
      'insecure-permissions',
      `${path} is accessible by group or others (mode ${(st.mode & 0o777).toString(8)}); refusing to use it. Fix with: chmod ${want} ${path}`,
      { path },
    )
  }
}

export class DataDir {
  constructor(readonly root: string) {}

  path(...parts: string[]): string {
    return join(this.root, ...parts)
  }

  /** Creates the folder (and parents inside the data directory) with mode 0700. */
  ensureDir(...parts: string[]): string {
    const dir = this.path(...parts)
    if (!existsSync(this.root)) {
      mkdirSync(this.root, { recursive: true, mode: 0o700 })
      chmodSync(this.root, 0o700)
    }
    if (!existsSync(dir)) mkdirSync(dir, { recursive: true, mode: 0o700 })
    return dir
  }

  exists(...parts: string[]): boolean {
    return existsSync(this.path(...parts))
  }

  /** Reads a secret file, refusing it when group or others can read it. Undefined when absent. */
  readSecret(rel: string): Buffer | undefined {
    const file = this.path(rel)
    if (!existsSync(file)) return undefined
    assertPrivate(file)
    return readFileSync(file)
  }

  readSecretText(rel: string): string | undefined {
    return this.readSecret(rel)?.toString('utf8')
  }

  /** Writes a secret file with mode 0600, atomically (temp file, fsync, rename). */
  writeSecret(rel: string, data: string | Uint8Array): string {
    const file = this.path(rel)
    this.ensureDir(dirname(rel))
    writeFileAtomic(file, data, 0o600)
    return file
  }

  /** Creates a secret file only if it does not exist; false when it already did. */
  createSecretExclusive(rel: string, data: string | Uint8Array): boolean {
    const file = this.path(rel)
    this.ensureDir(dirname(rel))
    let fd: number
    try {
      fd = openSync(file, 'wx', 0o600)
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'EEXIST') return false
      throw e
    }
    try {
      writeSync(fd, typeof data === 'string' ? Buffer.from(data) : data)
      fsyncSync(fd)
    } finally {
      closeSync(fd)
    }
    return true
  }
}

export function writeFileAtomic(file: string, data: string | Uint8Array, mode: number): void {
  const tmp = `${file}.tmp-${process.pid}-${Date.now()}`
  const fd = openSync(tmp, 'w', mode)
  try {
    writeSync(fd, typeof data === 'string' ? Buffer.from(data) : data)
    fsyncSync(fd)
  } finally {
    closeSync(fd)
  }
  chmodSync(tmp, mode)
  renameSync(tmp, file)
}
