// One uid per project (docs/security.md, "Who replicas run as"): an Agent
// that can switch users runs each project's replicas as a uid of its own,
// picked from a range the Agent owns, as systemd's DynamicUser= does, so one
// project can neither read another's files (replicas start with umask 077) nor
// signal its processes, and none can enter the node's data directory. No
// account is created: root can run a process as any uid.
//
// The range: 1879048192–2147483647, which systemd's uid map leaves unused
// (below it are container ranges, above it uids some tools take for negative),
// cut into 4096 slices of 65536; an Agent's slice is picked from its data
// directory and kept in worker/uids.json with each project's uid, so a project
// keeps its uid across restarts and a uid once given is never given to another
// project. A uid some account of this machine already has is skipped.
import { createHash } from 'node:crypto'
import { readdirSync, readFileSync } from 'node:fs'
import type { DataDir } from '../datadir.ts'
import { MusterError } from '../errors.ts'

export const UIDS_FILE = 'worker/uids.json'
export const UID_FIRST = 1_879_048_192
const SLICE = 65_536
const SLICES = 4096

interface UidsFile {
  first: number
  next: number
  projects: Record<string, number>
}

function accountIds(): Set<number> {
  const ids = new Set<number>()
  for (const file of ['/etc/passwd', '/etc/group']) {
    try {
      for (const line of readFileSync(file, 'utf8').split('\n')) {
        const id = Number(line.split(':')[2])
        if (Number.isInteger(id)) ids.add(id)
      }
    } catch {}
  }
  return ids
}

/** Whether `uid` lies in the range muster's Agents own. */
export const inMusterRange = (uid: number): boolean => Number.isInteger(uid) && uid >= UID_FIRST && uid < UID_FIRST + SLICE * SLICES

export class ProjectUids {
  private constructor(
    private readonly dataDir: DataDir,
    private readonly file: string,
    private state: UidsFile,
  ) {}

  /**
   * The data directory's uids, kept in `file` (its slice is chosen and recorded on first use). With `salt`
   * (the Platform's local node) the slice is another than the one an Agent on the same data directory takes.
   */
  static open(dataDir: DataDir, file = UIDS_FILE, salt?: string): ProjectUids {
    let state: UidsFile | undefined
    try {
      const v = JSON.parse(dataDir.readSecretText(file) ?? 'null') as UidsFile | null
      if (v && inMusterRange(v.first) && (v.first - UID_FIRST) % SLICE === 0 && Number.isInteger(v.next) && v.next >= 0 && v.next <= SLICE && typeof v.projects === 'object') state = v
    } catch {}
    if (!state) {
      const hash = (s: string) => createHash('sha256').update(s).digest().readUInt32BE(0)
      const agents = hash(dataDir.root) % SLICES
      const slice = salt === undefined ? agents : (agents + 1 + (hash(`${dataDir.root}\0${salt}`) % (SLICES - 1))) % SLICES
      state = { first: UID_FIRST + slice * SLICE, next: 0, projects: {} }
    }
    return new ProjectUids(dataDir, file, state)
  }

  /** The first uid of this Agent's slice. */
  get first(): number {
    return this.state.first
  }

  /** Whether `uid` is one this Agent gave to a project. */
  owns(uid: number): boolean {
    return Object.values(this.state.projects).includes(uid)
  }

  /** `project`'s uid, given (and recorded) the first time it is asked for. */
  uidFor(project: string): number {
    const known = this.state.projects[project]
    if (known !== undefined) return known
    const taken = accountIds()
    for (let i = this.state.next; i < SLICE; i++) {
      const uid = this.state.first + i
      if (taken.has(uid) || processesOf(uid).length > 0) continue
      this.state = { ...this.state, next: i + 1, projects: { ...this.state.projects, [project]: uid } }
      this.dataDir.writeSecret(this.file, `${JSON.stringify(this.state, null, 2)}\n`)
      return uid
    }
    throw new MusterError('internal', `This node has given all ${SLICE} uids of its range (from ${this.state.first}) to projects; remove ${this.dataDir.path(this.file)} once no replica runs to start over.`)
  }
}

/** The live processes (not zombies) whose real, effective or saved uid is `uid`. */
export function processesOf(uid: number): number[] {
  const out: number[] = []
  let entries: string[] = []
  try {
    entries = readdirSync('/proc')
  } catch {
    return out
  }
  for (const e of entries) {
    const pid = Number(e)
    if (!pid) continue
    try {
      const status = readFileSync(`/proc/${pid}/status`, 'utf8')
      const m = /^Uid:\s+(\d+)\s+(\d+)\s+(\d+)/m.exec(status)
      if (m && !/^State:\s+[ZX]/m.test(status) && (Number(m[1]) === uid || Number(m[2]) === uid || Number(m[3]) === uid)) out.push(pid)
    } catch {}
  }
  return out
}

/**
 * Kills every process of `uid` (where a project's replicas have no cgroup, its
 * own uid makes this exact) and waits until none is left; refuses any uid
 * outside muster's range. False when some were still there at the deadline.
 */
export async function killProcessesOf(uid: number, timeoutMs = 10_000): Promise<boolean> {
  if (!inMusterRange(uid)) throw new MusterError('internal', `refusing to kill the processes of uid ${uid}: not a project's uid`)
  const deadline = performance.now() + timeoutMs
  for (;;) {
    const pids = processesOf(uid)
    if (pids.length === 0) return true
    for (const pid of pids) {
      try {
        process.kill(pid, 'SIGKILL')
      } catch {}
    }
    if (performance.now() > deadline) return false
    await Bun.sleep(20)
  }
}
