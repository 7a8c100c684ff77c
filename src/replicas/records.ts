// The state file of the replica runner (worker/replicas.json): one record per
// running replica — which one, its PID, the start time /proc gave for that
// PID and the boot it ran in — written at every start, exit and stop, so the
// next Agent adopts exactly the processes this one started (src/replicas/runner.ts).
import { readFileSync } from 'node:fs'
import { inMusterRange } from './uids.ts'

export interface ReplicaRecord {
  project: string
  replica: number
  revision: number
  pid: number
  /** /proc/PID/stat field 22 when the replica started (clock ticks since boot). */
  startTime: string
  /** /proc/sys/kernel/random/boot_id then. */
  boot: string
  /** When it started (ms since the epoch). */
  startedAt: number
  /** Its cgroup (src/replicas/cgroups.ts), when it has one. */
  cgroup?: { dir: string; v1: string[] }
  /** The uid it runs as, when it is its project's own (src/replicas/uids.ts). */
  uid?: number
}

const PROJECT = /^[a-z0-9][a-z0-9-]{0,62}$/

/**
 * A recorded cgroup is used only when each of its directories is named for
 * this very replica: a record cannot aim `agent --stop-replicas`, run as root,
 * at any other cgroup (only who can write a cgroup tree can make such a name).
 */
function cgroupFits(r: Partial<ReplicaRecord>): boolean {
  if (r.cgroup === undefined) return true
  const c = r.cgroup as { dir?: unknown; v1?: unknown }
  const named = (d: unknown) => typeof d === 'string' && d.startsWith('/sys/fs/cgroup/') && !d.includes('..') && new RegExp(`/${r.project}\\.${r.replica}\\.${r.revision}\\.\\d{1,15}$`).test(d)
  return named(c.dir) && Array.isArray(c.v1) && c.v1.every(named)
}

const isRecord = (r: Partial<ReplicaRecord> | null): r is ReplicaRecord =>
  r !== null &&
  typeof r === 'object' &&
  typeof r.project === 'string' &&
  PROJECT.test(r.project) &&
  Number.isInteger(r.replica) &&
  r.replica! >= 0 &&
  Number.isInteger(r.revision) &&
  Number.isInteger(r.pid) &&
  r.pid! > 1 &&
  typeof r.startTime === 'string' &&
  /^\d+$/.test(r.startTime) &&
  typeof r.boot === 'string' &&
  typeof r.startedAt === 'number' &&
  (r.uid === undefined || inMusterRange(r.uid)) &&
  cgroupFits(r)

/** The records in `file`; none when it is missing or unreadable (nothing is adopted then). */
export function readRecords(file: string): ReplicaRecord[] {
  try {
    const v = JSON.parse(readFileSync(file, 'utf8')) as { replicas?: unknown }
    return Array.isArray(v.replicas) ? (v.replicas as Partial<ReplicaRecord>[]).filter(isRecord) : []
  } catch {
    return []
  }
}
