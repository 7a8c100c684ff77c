// Replicas a test started, found in /proc by the MUSTER_PROJECT=… every replica
// (and all it starts) has in its environment; readable for every process as
// root, for the test's own otherwise. Project names end in -<pid>t<random>
// (`runTag`), so what a run killed before its afterAll left (replicas outlive
// their Agent) is swept by the next, with the replicas' cgroups (no runner is
// left to remove them once the run's data directories are gone).
import { existsSync, readdirSync, readFileSync, rmdirSync } from 'node:fs'
import { basename, dirname, join } from 'node:path'

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

/** The cgroup folders of `pid` that a runner made for a replica (`<project>.<replica>.<revision>.<start>` under `muster-replicas-…`). */
function replicaCgroupsOf(pid: number): string[] {
  const points = readFileSync('/proc/self/mounts', 'utf8').split('\n').map((l) => l.split(' ')).filter((f) => f[2] === 'cgroup' || f[2] === 'cgroup2').map((f) => f[1]!)
  const out: string[] = []
  try {
    for (const line of readFileSync(`/proc/${pid}/cgroup`, 'utf8').split('\n')) {
      const path = line.split(':').slice(2).join(':')
      if (!basename(dirname(path)).startsWith('muster-replicas-')) continue
      for (const p of points) if (existsSync(join(p, path))) out.push(join(p, path))
    }
  } catch {}
  return out
}

/** Kills what earlier runs left (their pid is gone), or, with `tag`, this run's; then removes their emptied cgroups. */
export function sweepReplicas(tag?: string): void {
  const left = processesWhere((p) => {
    const m = /-(\d+)t[0-9a-f]{4}$/.exec(p)
    if (!m) return false
    if (tag) return p.endsWith(`-${tag}`)
    const pid = Number(m[1])
    return pid !== process.pid && !alive(pid)
  })
  const cgroups = new Set(left.flatMap(replicaCgroupsOf))
  for (const pid of left) {
    try {
      process.kill(pid, 'SIGKILL')
    } catch {}
  }
  if (cgroups.size === 0) return
  const deadline = Date.now() + 5_000
  while (left.some(alive) && Date.now() < deadline) Bun.sleepSync(20)
  for (const dir of cgroups) {
    for (const d of [dir, dirname(dir)]) {
      try {
        rmdirSync(d) // only an empty one goes; the subtree goes once no other replica's is left in it
      } catch {}
    }
  }
}

export const uidOf = (pid: number): number => Number(/^Uid:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1])
export const sessionOf = (pid: number): string => readFileSync(`/proc/${pid}/stat`, 'latin1').split(') ')[1]!.split(' ')[3]!
