// Replicas a test started, found in /proc by the MUSTER_PROJECT=… every replica
// (and all it starts) has in its environment; readable for every process as
// root, for the test's own otherwise. Project names end in -<pid>t<random>
// (`runTag`), so what a run killed before its afterAll left (replicas outlive
// their Agent) is swept by the next.
import { readdirSync, readFileSync } from 'node:fs'

export const runTag = (): string => `${process.pid}t${crypto.randomUUID().slice(0, 4)}`

/** Live processes (not zombies) whose environment names a project `match` accepts. */
export function processesWhere(match: (project: string) => boolean): number[] {
  const out: number[] = []
  for (const e of readdirSync('/proc')) {
    const pid = Number(e)
    if (!pid) continue
    try {
      if (/^State:\s+[ZX]/m.test(readFileSync(`/proc/${pid}/status`, 'utf8'))) continue
      const project = /(?:^|\0)MUSTER_PROJECT=([a-z0-9-]+)\0/.exec(readFileSync(`/proc/${pid}/environ`, 'latin1'))?.[1]
      if (project && match(project)) out.push(pid)
    } catch {}
  }
  return out
}

export const processesOf = (project: string): number[] => processesWhere((p) => p === project)

/** Whether `pid` is a live process (a zombie is not). */
export function alive(pid: number): boolean {
  try {
    return !/^State:\s+[ZX]/m.test(readFileSync(`/proc/${pid}/status`, 'utf8'))
  } catch {
    return false
  }
}

/** Kills what earlier runs left (their pid is gone), or, with `tag`, this run's. */
export function sweepReplicas(tag?: string): void {
  const left = processesWhere((p) => {
    const m = /-(\d+)t[0-9a-f]{4}$/.exec(p)
    if (!m) return false
    if (tag) return p.endsWith(`-${tag}`)
    const pid = Number(m[1])
    return pid !== process.pid && !alive(pid)
  })
  for (const pid of left) {
    try {
      process.kill(pid, 'SIGKILL')
    } catch {}
  }
}

export const uidOf = (pid: number): number => Number(/^Uid:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1])
export const sessionOf = (pid: number): string => readFileSync(`/proc/${pid}/stat`, 'latin1').split(') ')[1]!.split(' ')[3]!
