// platform/serve.lock: one `muster serve` per data directory. The file holds
// the pid and, on Linux, the process's start time, so a lock whose process is
// gone (kill -9, crash) — or whose pid now belongs to another process — is
// taken over.
import { closeSync, existsSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs'
import { MusterError } from './errors.ts'
import type { DataDir } from './datadir.ts'

export const LOCK_FILE = 'platform/serve.lock'

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM'
  }
}

/** The process's start time in clock ticks since boot (field 22 of /proc/PID/stat), or null off Linux. */
function startTime(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? null
  } catch {
    return null
  }
}

/** The pid of the `serve` holding this data directory, or null. */
export function serveLockHolder(dataDir: DataDir): number | null {
  const file = dataDir.path(LOCK_FILE)
  if (!existsSync(file)) return null
  const [pidText, started] = readFileSync(file, 'utf8').trim().split(/\s+/)
  const pid = Number.parseInt(pidText ?? '', 10)
  if (!Number.isInteger(pid) || pid <= 0 || !alive(pid)) return null
  // Same pid, another process: the holder died and its pid was reused.
  if (started && startTime(pid) !== null && startTime(pid) !== started) return null
  return pid
}

/** Takes the lock or refuses naming the pid that holds it; returns the release function. */
export function acquireServeLock(dataDir: DataDir): () => void {
  dataDir.ensureDir('platform')
  const file = dataDir.path(LOCK_FILE)
  const mine = `${process.pid}${startTime(process.pid) ? ` ${startTime(process.pid)}` : ''}`
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      const fd = openSync(file, 'wx', 0o600)
      writeSync(fd, `${mine}\n`)
      closeSync(fd)
      return () => {
        try {
          if (readFileSync(file, 'utf8').trim() === mine) unlinkSync(file)
        } catch {}
      }
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e
      const holder = serveLockHolder(dataDir)
      if (holder !== null && holder !== process.pid) {
        throw new MusterError('already-running', `Another muster serve (pid ${holder}) is using ${dataDir.root}; stop it first or use another --data-dir.`, { pid: holder })
      }
      try {
        unlinkSync(file) // stale: its process is gone
      } catch {}
    }
  }
  throw new MusterError('already-running', `Could not take ${file}; another process keeps creating it.`)
}
