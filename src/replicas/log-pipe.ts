// A replica's output through a writer of its own, so its log stays under its
// cap when no Agent runs (docs/workloads.md, reading a replica's output). Replicas outlive
// their Agent; a file they write themselves grows without end until an Agent
// adopts them and rotates it. Here their stdout and stderr are a FIFO beside
// the log (`<log>.pipe`), and GNU split, in a session of its own, reads it and
// hands each cap's worth of whole lines (`split -C`) to a filter that first
// rotates the file unless it is still nearly empty (a hard link to `.1`, then
// an empty file renamed over it: the log never goes missing), then appends.
// The writer ends when the replica and whatever it started have closed their
// end, needs no Agent, and takes about 2 MB (a writer of this binary would take
// ten times that per replica). A log with its FIFO beside it is rotated by its
// writer only (`hasWriter`), never by the Agent too. Where GNU split is
// missing the replica writes to its file itself, as before, and only a running
// Agent keeps the file capped.
import { closeSync, constants, existsSync, openSync, readdirSync, rmSync, statSync } from 'node:fs'
import { log } from '../log.ts'
import { rotateIfOver } from './log-files.ts'

export interface LogPipe {
  /** The descriptor for the replica's stdout and stderr (the FIFO's writing end). */
  fd: number
  /** The writer's process. */
  writer: Bun.Subprocess
  /** The replica was spawned with `fd`: this process's copy is closed once the writer holds the FIFO. */
  handedOver(): void
  /** The replica did not start: the writer is ended. */
  abandon(): void
  /** Resolves once the writer has written out what the replica wrote (its exit), or after `ms`. */
  drained(ms: number): Promise<void>
}

let gnuSplit: boolean | undefined
function haveGnuSplit(): boolean {
  if (gnuSplit === undefined) {
    const r = Bun.spawnSync(['split', '--version'], { stdout: 'pipe', stderr: 'ignore' })
    gnuSplit = r.exitCode === 0 && r.stdout.toString().includes('GNU coreutils')
    if (!gnuSplit) log.warn('GNU split (coreutils) is not installed: replica output goes straight to its log file, which only a running Agent keeps under its cap')
  }
  return gnuSplit
}

const quote = (s: string) => `'${s.replaceAll("'", `'\\''`)}'`

/** The FIFO's inode is among `pid`'s open files (or `pid` is gone: nothing to wait for). */
function holds(pid: number, ino: number): boolean {
  let fds: string[]
  try {
    fds = readdirSync(`/proc/${pid}/fd`)
  } catch {
    return true
  }
  return fds.some((n) => {
    try {
      return statSync(`/proc/${pid}/fd/${n}`).ino === ino
    } catch {
      return false
    }
  })
}

const fifoOf = (file: string) => `${file}.pipe`

/** This log is written (and rotated) by a writer of its own: the Agent leaves its rotation alone. */
export function hasWriter(file: string): boolean {
  return existsSync(fifoOf(file))
}

/** Past its cap: copied to `.1` and truncated (src/replicas/log-files.ts), unless its writer rotates it. */
export function capLog(file: string, maxBytes: number): void {
  if (!hasWriter(file)) rotateIfOver(file, maxBytes)
}

/**
 * The writer for a replica's log `file`, each file at most about `maxBytes` (a chunk of whole lines, on top of
 * at most a sixteenth of that); null where there can be none (the FIFO is removed then, so the Agent rotates it).
 */
export function startLogPipe(file: string, maxBytes: number): LogPipe | null {
  const fifo = fifoOf(file)
  // A writer left waiting on an old FIFO (its Agent died before the replica started) is let go: it sees its end.
  try {
    closeSync(openSync(fifo, constants.O_WRONLY | constants.O_NONBLOCK))
  } catch {}
  rmSync(fifo, { force: true })
  if (!haveGnuSplit()) return null
  if (Bun.spawnSync(['mkfifo', '-m', '600', fifo], { stdout: 'ignore', stderr: 'ignore' }).exitCode !== 0) return null
  let fd: number
  try {
    // Read-write: opening a FIFO so never waits for its other end (Linux), and the writer's open does not wait either.
    fd = openSync(fifo, constants.O_RDWR)
  } catch {
    rmSync(fifo, { force: true })
    return null
  }
  const ino = statSync(fifo).ino
  // Rotated unless it holds less than a sixteenth of the cap (a replica's first chunk after a start appends to
  // what little is there). `>>`: the Agent's own lines (start, exit) are appended to the same file.
  const f = quote(file)
  const filter = `umask 077; if [ "$(stat -c %s ${f} 2>/dev/null || echo 0)" -gt ${Math.floor(maxBytes / 16)} ]; then ln -f ${f} ${quote(`${file}.1`)} && : > ${quote(`${file}.new`)} && mv -f ${quote(`${file}.new`)} ${f}; fi; exec cat >> ${f}`
  let writer: Bun.Subprocess
  try {
    writer = Bun.spawn(['split', '-C', String(maxBytes), '-d', '-a', '12', '--filter', filter, fifo, `${file}.chunk`], { stdin: 'ignore', stdout: 'ignore', stderr: 'ignore', detached: true })
  } catch (e) {
    closeSync(fd)
    rmSync(fifo, { force: true })
    log.warn(`cannot start the log writer of ${file}: ${(e as Error).message}`)
    return null
  }
  writer.unref()
  let closed = false
  // The FIFO stays: it says the log has a writer (the next start of the replica makes a new one).
  const close = () => {
    if (closed) return
    closed = true
    closeSync(fd)
  }
  return {
    fd,
    writer,
    handedOver() {
      void (async () => {
        const deadline = performance.now() + 10_000
        while (!holds(writer.pid, ino) && performance.now() < deadline) await Bun.sleep(5)
        close()
      })()
    },
    abandon() {
      close()
      writer.kill('SIGKILL')
      rmSync(fifo, { force: true })
    },
    async drained(ms) {
      let timer: ReturnType<typeof setTimeout> | undefined
      await Promise.race([writer.exited, new Promise((resolve) => (timer = setTimeout(resolve, ms)))])
      clearTimeout(timer)
    },
  }
}
