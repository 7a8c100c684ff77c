// The state file of the replica runner (worker/replicas.json): one record per
// running replica — which one, its PID, the start time /proc gave for that
// PID and the boot it ran in — written at every start, exit and stop, so the
// next Agent adopts exactly the processes this one started (src/replicas/runner.ts).
import { readFileSync } from 'node:fs'

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
}

const PROJECT = /^[a-z0-9][a-z0-9-]{0,62}$/

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
  typeof r.startedAt === 'number'

/** The records in `file`; none when it is missing or unreadable (nothing is adopted then). */
export function readRecords(file: string): ReplicaRecord[] {
  try {
    const v = JSON.parse(readFileSync(file, 'utf8')) as { replicas?: unknown }
    return Array.isArray(v.replicas) ? (v.replicas as Partial<ReplicaRecord>[]).filter(isRecord) : []
  } catch {
    return []
  }
}
