// Replacing this process's image with another binary (execve(2) through
// bun:ffi): the PID, its start time, the ambient capabilities the unit grants
// and systemd's view of the service all stay, so the Agent restarts into a new
// version without asking systemd (which the hardened unit cannot) and without
// touching its replicas (their own sessions). Descriptors are opened
// close-on-exec by the runtime, so nothing leaks into the new image.
import { readFileSync, realpathSync } from 'node:fs'

/** The command line this process was started with (argv[0] first), from /proc/self/cmdline. */
export function ownArgv(): string[] {
  try {
    const parts = readFileSync('/proc/self/cmdline', 'utf8').split('\0')
    if (parts.at(-1) === '') parts.pop()
    if (parts.length > 0) return parts
  } catch {}
  return [process.execPath, ...process.argv.slice(2)]
}

/** The file this process runs (the real path of /proc/self/exe). */
export function ownBinary(): string {
  try {
    return realpathSync('/proc/self/exe')
  } catch {
    return process.execPath
  }
}

type Execve = (path: Uint8Array, argv: BigUint64Array, envp: BigUint64Array) => number

let execveFn: Execve | null | undefined
let errnoOf: (() => number) | null = null

async function load(): Promise<Execve | null> {
  if (execveFn !== undefined) return execveFn
  execveFn = null
  if (process.platform !== 'linux' && process.platform !== 'darwin') return null
  try {
    const { dlopen, FFIType, ptr } = await import('bun:ffi')
    const names = process.platform === 'darwin' ? ['libc.dylib', '/usr/lib/libSystem.B.dylib'] : ['libc.so.6', 'libc.musl-x86_64.so.1', 'libc.musl-aarch64.so.1']
    for (const name of names) {
      try {
        const { symbols } = dlopen(name, {
          execve: { args: [FFIType.ptr, FFIType.ptr, FFIType.ptr], returns: FFIType.i32 },
          ...(process.platform === 'linux' ? { __errno_location: { args: [], returns: FFIType.ptr } } : {}),
        })
        const s = symbols as unknown as { execve: (a: number, b: number, c: number) => number; __errno_location?: () => number }
        execveFn = (path, argv, envp) => s.execve(ptr(path), ptr(argv), ptr(envp))
        if (s.__errno_location) {
          const loc = s.__errno_location
          const { read } = await import('bun:ffi')
          errnoOf = () => read.i32(loc() as never, 0)
        }
        return execveFn
      } catch {}
    }
  } catch {}
  return null
}

/** Whether this platform can replace the process image. */
export async function canExec(): Promise<boolean> {
  return (await load()) !== null
}

/**
 * Replaces this process with `path` run as `argv` (argv[0] included) in
 * `env`. Returns only when that failed, with the reason.
 */
export async function execInPlace(path: string, argv: string[], env: Record<string, string | undefined>): Promise<string> {
  const execve = await load()
  if (!execve) return 'this platform cannot replace a running process (no execve)'
  const { ptr } = await import('bun:ffi')
  const keep: Buffer[] = []
  const cstr = (s: string) => {
    const b = Buffer.from(`${s}\0`)
    keep.push(b)
    return b
  }
  const array = (list: string[]) => {
    const a = new BigUint64Array(list.length + 1)
    list.forEach((s, i) => (a[i] = BigInt(ptr(cstr(s)))))
    a[list.length] = 0n
    return a
  }
  const envList = Object.entries(env)
    .filter((e): e is [string, string] => typeof e[1] === 'string' && !e[0].includes('='))
    .map(([k, v]) => `${k}=${v}`)
  const r = execve(cstr(path), array(argv), array(envList))
  const errno = errnoOf?.() ?? 0
  keep.length = 0
  return `execve ${path} failed (${r}${errno ? `, errno ${errno}` : ''})`
}
