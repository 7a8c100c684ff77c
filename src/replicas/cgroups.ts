// Each replica in its own cgroup (docs/security.md, "Replica containment"):
// every process it starts, however it forks or calls setsid, stays in that
// cgroup, so a stop ends all of them (cgroup.kill), and the project's --cpu and
// --memory become the cgroup's cpu.max and memory.max.
//
// Where the subtree comes from:
//  - an Agent that is not root uses the cgroup it was started in when that is
//    delegated to it (owned by its uid): install.sh's unit sets Delegate=yes;
//    without systemd the bootstrap line makes /muster-agent and hands it over.
//    The Agent moves itself into its `agent` leaf (cgroup v2 allows controllers
//    only on cgroups without processes of their own) and each replica gets a
//    sibling;
//  - a root Agent makes muster-replicas-<id of its data directory> at the root
//    of the cgroup v2 tree, outside any login session or unit that would kill
//    it on the way out.
// On a hybrid host (cgroup v1 controllers, cgroup v2 only for tracking) a root
// Agent puts the limits on cgroup v1's memory and cpu hierarchies instead
// (memory.limit_in_bytes, cpu.cfs_quota_us). Where none of this exists, null
// and a reason: the runner falls back to the replica's process group and its
// per-project uid.
import { createHash } from 'node:crypto'
import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, statSync, writeFileSync } from 'node:fs'
import { basename, dirname, join } from 'node:path'
import { log } from '../log.ts'

/** The leaf a delegated Agent moves itself into. */
export const AGENT_LEAF = 'agent'
const PERIOD_US = 100_000
/** `<project>.<replica>.<revision>.<start, ms>`: one cgroup per start, so a restart never meets what the last one left. */
const NAME = /^[a-z0-9][a-z0-9-]{0,62}\.\d{1,9}\.\d{1,15}\.\d{1,15}$/

export interface Limits {
  /** Millicores: 1000 is one core. */
  cpu: number
  /** MB. */
  memory: number
}

/** A replica's cgroup: its cgroup v2 directory, and on a hybrid host the cgroup v1 directories that carry its limits. */
export interface ReplicaCgroup {
  dir: string
  v1: string[]
}

interface Mount {
  point: string
  root: string
  type: 'cgroup' | 'cgroup2'
  /** The superblock's options (a cgroup v1 hierarchy's controllers are among them). */
  options: string[]
  readOnly: boolean
}

function mounts(): Mount[] {
  let text = ''
  try {
    text = readFileSync('/proc/self/mountinfo', 'utf8')
  } catch {
    return []
  }
  const out: Mount[] = []
  for (const line of text.split('\n')) {
    const [left, right] = line.split(' - ')
    if (!left || !right) continue
    const l = left.split(' ')
    const r = right.split(' ')
    if (r[0] !== 'cgroup' && r[0] !== 'cgroup2') continue
    out.push({ point: l[4]!.replace(/\\040/g, ' '), root: l[3]!, type: r[0], options: (r[2] ?? '').split(','), readOnly: (l[5] ?? '').split(',').includes('ro') })
  }
  return out
}

/** This process's cgroups: '' → the v2 path, 'memory' → the v1 memory path, … */
function ownPaths(): Map<string, string> {
  const m = new Map<string, string>()
  try {
    for (const line of readFileSync('/proc/self/cgroup', 'utf8').split('\n')) {
      const i = line.indexOf(':')
      const j = line.indexOf(':', i + 1)
      if (i < 0 || j < 0) continue
      const controllers = line.slice(i + 1, j)
      for (const c of controllers === '' ? [''] : controllers.split(',')) m.set(c, line.slice(j + 1))
    }
  } catch {}
  return m
}

/** `path` of a hierarchy as a directory under its mount, or undefined when it lies outside what is mounted (another cgroup namespace). */
function dirOf(mount: Mount, path: string | undefined): string | undefined {
  if (path === undefined || path.includes('..')) return undefined
  const root = mount.root === '/' ? '' : mount.root
  if (root && path !== root && !path.startsWith(`${root}/`)) return undefined
  return join(mount.point, path.slice(root.length) || '/')
}

const read = (file: string): string => {
  try {
    return readFileSync(file, 'utf8')
  } catch {
    return ''
  }
}

function write(file: string, value: string): boolean {
  try {
    writeFileSync(file, value)
    return true
  } catch (e) {
    log.debug(`cgroup: cannot write ${value} to ${file}: ${(e as Error).message}`)
    return false
  }
}

const ownedBy = (dir: string, uid: number): boolean => {
  try {
    return statSync(dir).uid === uid && statSync(join(dir, 'cgroup.procs')).uid === uid
  } catch {
    return false
  }
}

/** The id of a root Agent's subtree: from its data directory, so the next Agent finds the same one. */
export const subtreeName = (dataDir: string): string => `muster-replicas-${createHash('sha256').update(dataDir).digest('hex').slice(0, 12)}`

export interface CgroupsFound {
  cgroups: Cgroups | null
  /** Why replicas get no cgroup (null: they do). */
  reason: string | null
  /** Why their limits are not enforced (null: they are). */
  limitsReason: string | null
}

export class Cgroups {
  private constructor(
    /** The Agent's cgroup v2 subtree (a directory). */
    readonly base: string,
    /** Where memory and cpu limits go: 'cgroup2', 'cgroup1', or nowhere. */
    readonly limitsVia: 'cgroup2' | 'cgroup1' | null,
    /** On a hybrid host: the cgroup v1 memory and cpu directories replicas are made under. */
    private readonly v1Bases: string[],
  ) {}

  /** Finds (and prepares) the subtree this Agent may use, for the data directory `dataDir`. */
  static find(dataDir: string): CgroupsFound {
    const all = mounts()
    const v2 = all.find((m) => m.type === 'cgroup2')
    if (!v2) return { cgroups: null, reason: 'there is no cgroup v2 hierarchy mounted', limitsReason: 'no cgroups' }
    const own = ownPaths()
    const ownDir = dirOf(v2, own.get(''))
    const uid = process.getuid?.() ?? -1
    let base: string
    if (uid === 0) {
      base = join(v2.point, subtreeName(dataDir))
      try {
        mkdirSync(base, { recursive: true, mode: 0o755 })
      } catch (e) {
        return { cgroups: null, reason: `cannot make the cgroup ${base}: ${(e as Error).message}`, limitsReason: 'no cgroups' }
      }
    } else {
      let dir = ownDir
      if (dir && basename(dir) === AGENT_LEAF && ownedBy(dirname(dir), uid)) dir = dirname(dir)
      if (!dir || dir === v2.point || !ownedBy(dir, uid)) {
        return { cgroups: null, reason: `the Agent's cgroup (${own.get('') ?? 'unknown'}) is not delegated to it (install.sh's unit sets Delegate=yes; without systemd the bootstrap line makes one)`, limitsReason: 'no cgroups' }
      }
      base = dir
      // Out of the way of its replicas: the Agent's own leaf.
      const leaf = join(base, AGENT_LEAF)
      try {
        mkdirSync(leaf, { recursive: true })
      } catch {}
      if (ownDir !== leaf && !write(join(leaf, 'cgroup.procs'), String(process.pid))) {
        return { cgroups: null, reason: `cannot move the Agent into ${leaf}`, limitsReason: 'no cgroups' }
      }
    }
    // Controllers for the replicas' cgroups (the root of the tree may have to pass them down first).
    const want = ['memory', 'cpu', 'pids']
    if (uid === 0) enable(v2.point, want)
    const got = enable(base, want)
    let limitsVia: Cgroups['limitsVia'] = got.includes('memory') && got.includes('cpu') ? 'cgroup2' : null
    let limitsReason: string | null = null
    const v1Bases: string[] = []
    if (!limitsVia) {
      const v1 = ['memory', 'cpu'].map((c) => {
        const m = all.find((x) => x.type === 'cgroup' && x.options.includes(c) && !x.readOnly)
        const d = m && dirOf(m, own.get(c))
        return d ? join(d, subtreeName(dataDir)) : undefined
      })
      if (uid === 0 && v1.every((d) => d !== undefined)) {
        try {
          for (const d of v1 as string[]) mkdirSync(d, { recursive: true })
          v1Bases.push(...(v1 as string[]))
          limitsVia = 'cgroup1'
        } catch (e) {
          limitsReason = `cannot make cgroup v1 directories for the limits: ${(e as Error).message}`
        }
      } else {
        const missing = want.slice(0, 2).filter((c) => !got.includes(c))
        limitsReason = `the cgroup v2 tree here has no ${missing.join(' or ')} controller for the Agent's subtree${uid !== 0 && v1.some((d) => d) ? ' (cgroup v1 has them, but only root may move processes there)' : ''}`
      }
    }
    const cgroups = new Cgroups(base, limitsVia, v1Bases)
    // A root Agent's subtree exists only while it holds replicas (each create makes it again): none is left by an Agent that ran none.
    cgroups.prune()
    return { cgroups, reason: null, limitsReason }
  }

  /** The cgroup named `name` (one start of a replica), made if missing, with `limits` applied. */
  create(name: string, limits: Limits): ReplicaCgroup {
    if (!NAME.test(name)) throw new Error(`not a replica cgroup name: ${name}`)
    const cg = this.named(name)
    // A root Agent's subtree is removed whenever it is empty: made again, with its controllers.
    if (!existsSync(this.base)) {
      mkdirSync(this.base, { recursive: true, mode: 0o755 })
      enable(this.base, ['memory', 'cpu', 'pids'])
    }
    mkdirSync(cg.dir, { recursive: true })
    for (const d of cg.v1) mkdirSync(d, { recursive: true })
    const bytes = String(Math.max(1, limits.memory) * 1048576)
    const quota = String(Math.max(1000, Math.round((limits.cpu * PERIOD_US) / 1000)))
    if (this.limitsVia === 'cgroup2') {
      write(join(cg.dir, 'memory.max'), bytes)
      if (existsSync(join(cg.dir, 'memory.swap.max'))) write(join(cg.dir, 'memory.swap.max'), '0')
      write(join(cg.dir, 'memory.oom.group'), '1')
      write(join(cg.dir, 'cpu.max'), `${quota} ${PERIOD_US}`)
    } else if (this.limitsVia === 'cgroup1') {
      const [mem, cpu] = cg.v1 as [string, string]
      write(join(mem, 'memory.limit_in_bytes'), bytes)
      if (existsSync(join(mem, 'memory.memsw.limit_in_bytes'))) write(join(mem, 'memory.memsw.limit_in_bytes'), bytes)
      write(join(cpu, 'cpu.cfs_period_us'), String(PERIOD_US))
      write(join(cpu, 'cpu.cfs_quota_us'), quota)
    }
    return cg
  }

  /** Removes a root Agent's subtree when no replica is left in it (made again by the next create). */
  prune(): void {
    if (!basename(this.base).startsWith('muster-replicas-')) return
    for (const d of [this.base, ...this.v1Bases]) {
      try {
        rmdirSync(d)
      } catch {}
    }
  }

  /** The directories of replica `name` (whether or not they exist). */
  named(name: string): ReplicaCgroup {
    return { dir: join(this.base, name), v1: this.v1Bases.map((b) => join(b, name)) }
  }

  /** Replica cgroups present under the subtree (their names). */
  list(): string[] {
    try {
      return readdirSync(this.base).filter((n) => NAME.test(n) && existsSync(join(this.base, n, 'cgroup.procs')))
    } catch {
      return []
    }
  }

  /** What the limits are, as written (for tests and doctor): cgroup v2's memory.max and cpu.max, or their v1 equivalents. */
  limitsOf(cg: ReplicaCgroup): { memoryBytes: number | null; cpuQuotaUs: number | null } {
    if (this.limitsVia === 'cgroup2') {
      const [q] = read(join(cg.dir, 'cpu.max')).trim().split(' ')
      return { memoryBytes: Number(read(join(cg.dir, 'memory.max')).trim()) || null, cpuQuotaUs: Number(q) || null }
    }
    if (this.limitsVia === 'cgroup1') return { memoryBytes: Number(read(join(cg.v1[0]!, 'memory.limit_in_bytes')).trim()) || null, cpuQuotaUs: Number(read(join(cg.v1[1]!, 'cpu.cfs_quota_us')).trim()) || null }
    return { memoryBytes: null, cpuQuotaUs: null }
  }
}

/** Moves `pid` into `cg` (cgroup v2, then each v1 directory); false when it could not be moved into the v2 one. */
export function enterCgroup(cg: ReplicaCgroup, pid: number): boolean {
  if (!write(join(cg.dir, 'cgroup.procs'), String(pid))) return false
  for (const d of cg.v1) write(join(d, 'cgroup.procs'), String(pid))
  return true
}

/** The processes in `cg` now. */
export function cgroupMembers(cg: ReplicaCgroup): number[] {
  return read(join(cg.dir, 'cgroup.procs')).split('\n').map(Number).filter((n) => n > 0)
}

/** Sends `signal` to every process in `cg`; how many there were. */
export function signalCgroup(cg: ReplicaCgroup, signal: NodeJS.Signals): number {
  const pids = cgroupMembers(cg)
  for (const pid of pids) {
    try {
      process.kill(pid, signal)
    } catch {}
  }
  return pids.length
}

/** Kills every process in `cg` (cgroup.kill, which nothing escapes by forking; else SIGKILL until it is empty) and waits until it is empty. */
export async function killCgroup(cg: ReplicaCgroup, timeoutMs = 10_000): Promise<boolean> {
  const hasKill = existsSync(join(cg.dir, 'cgroup.kill'))
  const deadline = performance.now() + timeoutMs
  for (;;) {
    if (cgroupMembers(cg).length === 0) return true
    if (hasKill) write(join(cg.dir, 'cgroup.kill'), '1')
    else signalCgroup(cg, 'SIGKILL')
    if (performance.now() > deadline) return false
    await Bun.sleep(20)
  }
}

/** How many times the kernel killed a process of `cg` for its memory limit. */
export function oomKills(cg: ReplicaCgroup): number {
  const events = read(join(cg.dir, 'memory.events'))
  const v2 = /^oom_kill (\d+)$/m.exec(events)
  if (v2) return Number(v2[1])
  for (const d of cg.v1) {
    const v1 = /^oom_kill (\d+)$/m.exec(read(join(d, 'memory.oom_control')))
    if (v1) return Number(v1[1])
  }
  return 0
}

/** Removes the (empty) cgroup directories of `cg`, and a root Agent's subtree above them once it is empty (the next create makes it again). */
export function removeCgroup(cg: ReplicaCgroup): void {
  for (const d of [cg.dir, ...cg.v1]) {
    for (const dir of basename(dirname(d)).startsWith('muster-replicas-') ? [d, dirname(d)] : [d]) {
      try {
        rmdirSync(dir)
      } catch {}
    }
  }
}

/** Turns on `want` controllers for the children of `dir`, as far as its parent gave them; the ones it has after. */
function enable(dir: string, want: string[]): string[] {
  const available = read(join(dir, 'cgroup.controllers')).trim().split(/\s+/)
  for (const c of want) if (available.includes(c) && !read(join(dir, 'cgroup.subtree_control')).split(/\s+/).includes(c)) write(join(dir, 'cgroup.subtree_control'), `+${c}`)
  const on = read(join(dir, 'cgroup.subtree_control')).trim().split(/\s+/)
  return want.filter((c) => on.includes(c))
}
