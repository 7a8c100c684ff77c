// kill -9 of a running `muster serve` as a crash would do it (the HA demo and the
// crash tests): the engine that serves and writes first, then the supervisor. A
// killed supervisor alone makes its engine stop cleanly (leases given up,
// heartbeats flushed), which is not a crash.
import { existsSync, readdirSync, readFileSync } from 'node:fs'

/** The state letter and parent of a process from /proc/PID/stat (the name may hold spaces and parentheses). */
function stat(pid: number): { state: string; ppid: number } | null {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8')
    const [state, ppid] = text.slice(text.lastIndexOf(') ') + 2).split(' ')
    return { state: state!, ppid: Number(ppid) }
  } catch {
    return null
  }
}

/** The processes whose parent is `pid` (Linux /proc). */
export function childPids(pid: number): number[] {
  return readdirSync('/proc')
    .filter((d) => /^\d+$/.test(d))
    .map(Number)
    .filter((p) => stat(p)?.ppid === pid)
}

/** Kills serve's engine(s) and then serve itself with SIGKILL; resolves when all are gone (or zombies). */
export async function killServeHard(proc: { pid: number; kill(signal: NodeJS.Signals): void; exited: Promise<number> }, timeoutMs = 30_000): Promise<void> {
  const engines = childPids(proc.pid)
  for (const pid of engines) process.kill(pid, 'SIGKILL')
  proc.kill('SIGKILL')
  await proc.exited
  const gone = (pid: number) => !existsSync(`/proc/${pid}`) || stat(pid)?.state === 'Z'
  const deadline = Date.now() + timeoutMs
  while (!engines.every(gone)) {
    if (Date.now() > deadline) throw new Error(`engine(s) ${engines.join(', ')} still running after kill -9`)
    await Bun.sleep(20)
  }
}
