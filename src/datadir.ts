// The data directory (docs/operations.md): where it is, its 0700 folders and 0600 secret
// files, and the refusal to use a secret that others can read.
import { chmodSync, closeSync, constants, existsSync, fchmodSync, fsyncSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, statSync, writeFileSync, writeSync } from 'node:fs'
import { randomBytes } from 'node:crypto'
import { basename, dirname, join, resolve } from 'node:path'
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

  /**
   * Writes a secret file with mode 0600, atomically (temp file, fsync, rename).
   * The folders on the way are opened one by one without following a symlink
   * and the file is written through that open folder, so an account that owns
   * the data directory (root joining into the muster account's) cannot redirect
   * the write elsewhere by swapping a folder for a symlink.
   */
  writeSecret(rel: string, data: string | Uint8Array): string {
    const file = this.path(rel)
    this.ensureDir(dirname(rel))
    const dir = openDirNoFollow(this.root, dirname(rel))
    try {
      writeFileAtomic(dir === undefined ? file : `/proc/self/fd/${dir}/${basename(rel)}`, data, 0o600)
    } finally {
      if (dir !== undefined) closeSync(dir)
    }
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

/**
 * Writes `file` atomically with `mode`: a temporary file beside it with an
 * unguessable name, created exclusively and never through a symlink
 * (O_CREAT|O_EXCL|O_NOFOLLOW), its mode set on the open file, fsynced, then
 * renamed over `file`. Nobody who can write the folder can have planted the
 * temporary name, nor hold it open.
 */
export function writeFileAtomic(file: string, data: string | Uint8Array, mode: number): void {
  const tmp = `${file}.tmp-${randomBytes(12).toString('hex')}`
  const fd = openSync(tmp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, mode & 0o777)
  try {
    fchmodSync(fd, mode)
    writeFileSync(fd, data)
    fsyncSync(fd)
  } catch (e) {
    closeSync(fd)
    rmSync(tmp, { force: true })
    throw e
  }
  closeSync(fd)
  renameSync(tmp, file)
}

const PROC_FD = '/proc/self/fd'

/**
 * An open descriptor of `root/rel` reached without following a symlink below
 * `root` (each step opened through the previous one's /proc/self/fd entry, as
 * openat would); undefined where there is no /proc. Refuses a symlink on the way.
 */
export function openDirNoFollow(root: string, rel: string): number | undefined {
  if (!existsSync(PROC_FD)) return undefined
  const flags = constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW
  let fd = openSync(root, constants.O_RDONLY | constants.O_DIRECTORY)
  for (const part of rel.split('/').filter((p) => p && p !== '.')) {
    let next: number
    try {
      next = openSync(`${PROC_FD}/${fd}/${part}`, flags)
    } catch (e) {
      closeSync(fd)
      const code = (e as NodeJS.ErrnoException).code
      if (code === 'ELOOP' || code === 'ENOTDIR') {
        throw new MusterError('insecure-permissions', `${join(root, rel)}: ${part} is not a folder (a symlink?); refusing to write through it. Remove it and run again.`, { path: join(root, rel) })
      }
      throw e
    }
    closeSync(fd)
    fd = next
  }
  return fd
}
