// Processes a test run left behind, found by the run's marker: every process a
// run starts inherits MUSTER_TEST_RUN (the replica runner passes it on to
// replicas, which otherwise get an environment of their own), so a process
// whose /proc/PID/environ names the run's marker, or one below it
// (`<marker>.<more>`: a mutant entry inside a CI run), belongs to that run.
// The harness (.ci/run, the mutants runner, and the preload for a run by hand)
// lists and kills them when the run ends. Only processes this user may read
// are seen (all of them as root). The caller and its ancestors (which hold the
// marker too) are never counted.
import { readdirSync, readFileSync } from 'node:fs'

export const RUN_MARKER = 'MUSTER_TEST_RUN'

export interface Leftover {
  pid: number
  marker: string
  command: string
}

function ancestors(): Set<number> {
  const out = new Set<number>()
  let pid = process.pid
  while (pid > 1 && !out.has(pid)) {
    out.add(pid)
    try {
      const m = /^PPid:\s+(\d+)$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
      pid = m ? Number(m[1]) : 0
    } catch {
      break
    }
  }
  return out
}

/** The live processes carrying `marker` (or a marker below it), not counting this process and its ancestors. */
export function markedProcesses(marker: string): Leftover[] {
  const skip = ancestors()
  const out: Leftover[] = []
  let entries: string[]
  try {
    entries = readdirSync('/proc')
  } catch {
    return out
  }
  for (const name of entries) {
    if (!/^\d+$/.test(name)) continue
    const pid = Number(name)
    if (skip.has(pid)) continue
    let environ: string
    let stat: string
    try {
      environ = readFileSync(`/proc/${pid}/environ`, 'latin1')
      stat = readFileSync(`/proc/${pid}/stat`, 'latin1')
    } catch {
      continue
    }
    // A zombie is gone already (its parent has yet to reap it).
    if (/^\d+ \(.*\) [ZX] /s.test(stat)) continue
    const value = environ
      .split('\0')
      .find((kv) => kv.startsWith(`${RUN_MARKER}=`))
      ?.slice(RUN_MARKER.length + 1)
    if (value === undefined || (value !== marker && !value.startsWith(`${marker}.`))) continue
    let command = ''
    try {
      command = readFileSync(`/proc/${pid}/cmdline`, 'latin1').split('\0').filter(Boolean).join(' ')
    } catch {}
    out.push({ pid, marker: value, command: command.slice(0, 300) })
  }
  return out
}

/**
 * Waits up to `graceMs` for the marked processes to end by themselves (a process
 * in the middle of its exit), then kills what is left (SIGKILL) and returns it.
 */
export async function sweepMarked(marker: string, graceMs = 0): Promise<Leftover[]> {
  const deadline = Date.now() + graceMs
  let left = markedProcesses(marker)
  while (left.length > 0 && Date.now() < deadline) {
    await Bun.sleep(100)
    left = markedProcesses(marker)
  }
  for (const p of left) {
    try {
      process.kill(p.pid, 'SIGKILL')
    } catch {}
  }
  return left
}

export const describeLeftovers = (left: Leftover[]) => left.map((p) => `  pid ${p.pid} (${p.marker}): ${p.command}`).join('\n')
