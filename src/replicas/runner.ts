// The replica runner: each assigned replica is a process in its own session
// (its own process group), its stdout and stderr on a size-capped file,
// restarted with exponential backoff. `apply` makes the running set match the
// assignments.
//
// Containment (docs/security.md): each start of a replica gets a cgroup of its
// own (src/replicas/cgroups.ts) with the project's cpu and memory limits; the
// replica waits in a small shell until it has been moved there, so nothing it
// forks can start outside. Stopping it, or its exit, kills the whole cgroup:
// a process that called setsid or double-forked dies with it. Where there is no
// cgroup, the process group is signalled, and when the project has a uid of its
// own (src/replicas/uids.ts) every process of that uid is killed with its last
// replica here. A kill by the kernel for the memory limit is logged and
// reported (reason out-of-memory).
//
// Replicas outlive their Agent: nothing ties them to the
// Agent's process (no pipes, their own session), and every start is recorded
// (PID, start time from /proc, boot id) in the state file. The next Agent
// adopts each recorded replica that is still the same process — a recycled
// PID has another start time and is never taken — and stops only what its
// assignments no longer name. A replica that exited while no Agent ran is
// reported (its exit status could not be waited on, so it is unknown) and
// restarted. `release` leaves everything running; `stopAll` stops it. The
// record keeps each replica's cgroup, so the next Agent (or `agent
// --stop-replicas`) stops what escaped its process group too. A start is
// recorded before its command may run (src/replicas/spawn.ts): an Agent killed
// between the spawn and the record leaves nothing running, so the next one
// starts exactly one copy.
import { appendFileSync, existsSync, mkdirSync } from 'node:fs'
import type { AssignedReplica } from '../wire/projects.ts'
import { fields, log } from '../log.ts'
import { replicaRestarts } from '../metrics/agent.ts'
import { tunableNumber } from '../tunables.ts'
import { writeFileAtomic } from '../datadir.ts'
import type { RunAs } from './isolation.ts'
import { cgroupMembers, killCgroup, oomKills, removeCgroup, signalCgroup, type Cgroups, type ReplicaCgroup } from './cgroups.ts'
import { inMusterRange, killProcessesOf } from './uids.ts'
import { DEFAULT_LOG_MAX_BYTES, logFileName } from './log-files.ts'
import { capLog } from './log-pipe.ts'
import { goAhead, spawnWaiting, type Spawned } from './spawn.ts'
import { bootId, sameProcess, procStat, signalGroup } from './procs.ts'
import { readRecords, type ReplicaRecord } from './records.ts'

export type ReplicaState = 'pending' | 'running' | 'failed' | 'stopped'

/** Why a replica failed, when the runner knows more than its exit status. */
export type ReplicaReason = 'out-of-memory'

export interface RunnerOptions {
  /** Folder for per-replica logs. */
  logDir: string
  /** Where started replicas are recorded for the next Agent to adopt (none: nothing is adopted). */
  stateFile?: string
  /** Bytes a log may grow to before it is rotated to `.1`. */
  maxLogBytes?: number
  /** SIGTERM, then SIGKILL after this long. */
  stopGraceMs?: number
  backoffStartMs?: number
  backoffMaxMs?: number
  /** A replica that ran this long resets its backoff. */
  stableAfterMs?: number
  /** How often logs are checked for rotation and adopted replicas for their exit. */
  watchMs?: number
  /** Who each project's replicas run as (none: the runner's own user). */
  runAs?: (project: string) => RunAs | undefined
  /** Where replicas get their cgroups (none: process groups only). */
  cgroups?: Cgroups | null
  /** Called when a replica changes state (the Agent reports it early). */
  onChange?: () => void
}

interface Supervised {
  spec: AssignedReplica
  /** Our own child (null for one adopted from an earlier Agent, or none running). */
  proc: Bun.Subprocess | null
  pid: number | null
  startTime: string | null
  state: ReplicaState
  exitCode: number | null
  restarts: number
  startedAt: number
  timer: ReturnType<typeof setTimeout> | null
  stopping: boolean
  /** The cgroup of the current start, if any. */
  cgroup: ReplicaCgroup | null
  /** The uid it runs as, when that is its project's own. */
  uid: number | null
  reason: ReplicaReason | null
  /** Adopted from the state file and not yet named by an assignment. */
  placeholder: boolean
}

const keyOf = (r: { project: string; replica: number; revision: number }) => `${r.project}/${r.replica}/${r.revision}`

export class Runner {
  private readonly replicas = new Map<string, Supervised>()
  private readonly opts: Required<Omit<RunnerOptions, 'stateFile' | 'runAs' | 'cgroups'>> & Pick<RunnerOptions, 'stateFile' | 'runAs' | 'cgroups'>
  private watch: ReturnType<typeof setInterval> | undefined
  private released = false

  constructor(opts: RunnerOptions) {
    this.opts = { maxLogBytes: DEFAULT_LOG_MAX_BYTES, stopGraceMs: 5000, backoffStartMs: 500, backoffMaxMs: 60_000, stableAfterMs: 30_000, watchMs: 1000, onChange: () => {}, ...opts }
    mkdirSync(this.opts.logDir, { recursive: true, mode: 0o700 })
    this.adopt()
    this.watch = setInterval(() => this.check(), this.opts.watchMs)
    this.watch.unref?.()
  }

  /** Starts what is assigned and not running; stops what runs and is no longer assigned. */
  apply(assigned: AssignedReplica[]): void {
    if (this.released) return
    const want = new Map(assigned.map((r) => [keyOf(r), r]))
    for (const [key, s] of this.replicas) if (!want.has(key)) void this.stop(key, s)
    for (const [key, spec] of want) {
      const s = this.replicas.get(key)
      if (!s) this.start(key, spec)
      else if (s.placeholder) {
        // Adopted (or found exited) at start: now we know how to restart it.
        s.spec = spec
        s.placeholder = false
        if (s.state === 'failed' && !s.timer && !s.stopping) this.scheduleRestart(s)
      }
    }
  }

  status(): { project: string; replica: number; revision: number; state: ReplicaState; exitCode: number | null; reason?: ReplicaReason }[] {
    return [...this.replicas.values()].map((s) => ({ project: s.spec.project, replica: s.spec.replica, revision: s.spec.revision, state: s.state, exitCode: s.exitCode, ...(s.reason && s.state === 'failed' ? { reason: s.reason } : {}) }))
  }

  /** The cgroups of running replicas (tests and doctor). */
  cgroupsOf(): { project: string; replica: number; cgroup: ReplicaCgroup }[] {
    return [...this.replicas.values()].filter((s) => s.cgroup).map((s) => ({ project: s.spec.project, replica: s.spec.replica, cgroup: s.cgroup! }))
  }

  /** The PIDs of running replicas (tests and the log relay). */
  pids(): { project: string; replica: number; revision: number; pid: number }[] {
    return [...this.replicas.values()].filter((s) => s.pid !== null && s.state === 'running').map((s) => ({ project: s.spec.project, replica: s.spec.replica, revision: s.spec.revision, pid: s.pid! }))
  }

  /** Stops every replica (on purpose: `agent --stop-replicas`, or the Platform's own node stopping). */
  async stopAll(): Promise<void> {
    await Promise.all([...this.replicas].map(([key, s]) => this.stop(key, s)))
    this.close()
  }

  /** Leaves every replica running for the next Agent to adopt (the Agent stops or restarts). */
  release(): void {
    this.released = true
    for (const s of this.replicas.values()) if (s.timer) clearTimeout(s.timer)
    this.save()
    this.close()
  }

  logFile(project: string, replica: number): string {
    return logFileName(this.opts.logDir, project, replica)
  }

  private close(): void {
    if (this.watch) clearInterval(this.watch)
    this.watch = undefined
    this.opts.cgroups?.prune()
  }

  /** Takes over what the state file records: the same processes keep running, the gone ones are reported. */
  private adopt(): void {
    if (!this.opts.stateFile) return
    const gone: Supervised[] = []
    for (const r of readRecords(this.opts.stateFile)) {
      const spec: AssignedReplica = { project: r.project, replica: r.replica, revision: r.revision, command: [], env: {}, cpu: 0, memory: 0 }
      const key = keyOf(spec)
      if (this.replicas.has(key)) continue
      const cgroup = r.cgroup && existsSync(r.cgroup.dir) ? r.cgroup : null
      const s: Supervised = { spec, proc: null, pid: null, startTime: null, state: 'failed', exitCode: null, restarts: 0, startedAt: r.startedAt, timer: null, stopping: false, placeholder: true, cgroup, uid: r.uid ?? null, reason: null }
      if (sameProcess(r.pid, r.startTime, r.boot)) {
        Object.assign(s, { pid: r.pid, startTime: r.startTime, state: 'running' })
        log.info(`replica ${r.project}/${r.replica} (pid ${r.pid}) is still running: adopted${cgroup ? ` with its cgroup ${cgroup.dir}` : ''}`)
      } else {
        this.exitedUnseen(s, r.pid, 'while no Agent ran')
        gone.push(s)
      }
      this.replicas.set(key, s)
    }
    // What the gone ones left behind dies now (their cgroups; or their project's uid, when no replica of it is left).
    for (const s of gone) void this.ended(s)
    this.sweep()
    this.save()
  }

  /** Kills and removes replica cgroups under this runner's subtree that no record names (left by a crash between start and record). */
  private sweep(): void {
    const cgroups = this.opts.cgroups
    if (!cgroups) return
    const known = new Set([...this.replicas.values()].map((s) => s.cgroup?.dir))
    for (const name of cgroups.list()) {
      const cg = cgroups.named(name)
      if (known.has(cg.dir)) continue
      log.warn(`cgroup ${cg.dir} belongs to no recorded replica: its processes are stopped`)
      void killCgroup(cg).then(() => removeCgroup(cg))
    }
  }

  /**
   * After a replica's main process ended (or before it starts again): every
   * process it left is killed — its cgroup, or where it has none and no other
   * replica of its project runs here, every process of its project's uid.
   */
  private async ended(s: Supervised): Promise<void> {
    const cg = s.cgroup
    if (cg) {
      if (!(await killCgroup(cg))) log.warn(`replica ${s.spec.project}/${s.spec.replica}: processes left in ${cg.dir} did not die (${cgroupMembers(cg).join(' ')})`)
      removeCgroup(cg)
      if (s.cgroup === cg) s.cgroup = null
      return
    }
    const uid = s.uid
    if (uid === null || !inMusterRange(uid)) return
    const others = [...this.replicas.values()].some((o) => o !== s && o.spec.project === s.spec.project && o.pid !== null)
    if (!others) await killProcessesOf(uid)
  }

  private exitedUnseen(s: Supervised, pid: number, when: string): void {
    s.state = 'failed'
    s.exitCode = null
    s.pid = null
    s.startTime = null
    this.writeLog(this.logFile(s.spec.project, s.spec.replica), `--- exited ${when} (pid ${pid}); its exit status is unknown\n`)
    log.warn(`replica ${s.spec.project}/${s.spec.replica} (pid ${pid}) exited ${when}; its exit status is unknown`)
  }

  /** Each tick: rotate logs past the cap; notice adopted replicas that exited. */
  private check(): void {
    for (const s of this.replicas.values()) {
      const file = this.logFile(s.spec.project, s.spec.replica)
      capLog(file, this.opts.maxLogBytes)
      if (s.proc || s.pid === null || s.stopping || s.state !== 'running') continue
      if (sameProcess(s.pid, s.startTime ?? '', bootId())) continue
      this.exitedUnseen(s, s.pid, 'after this Agent adopted it')
      void this.ended(s)
      this.save()
      this.opts.onChange()
      if (!s.placeholder) this.scheduleRestart(s)
    }
  }

  private start(key: string, spec: AssignedReplica): void {
    const s: Supervised = { spec, proc: null, pid: null, startTime: null, state: 'pending', exitCode: null, restarts: 0, startedAt: 0, timer: null, stopping: false, placeholder: false, cgroup: null, uid: null, reason: null }
    this.replicas.set(key, s)
    this.launch(s)
  }

  private launch(s: Supervised): void {
    const { spec } = s
    const runAs = this.opts.runAs?.(spec.project)
    const file = this.logFile(spec.project, spec.replica)
    this.writeLog(file, `--- ${new Date().toISOString()} starting revision ${spec.revision}: ${spec.command.join(' ')}\n`)
    let spawned: Spawned
    try {
      spawned = spawnWaiting(spec, file, this.opts.maxLogBytes, runAs, this.opts.cgroups)
    } catch (e) {
      this.cannotStart(s, file, (e as Error).message)
      return
    }
    const { proc, cgroup: cg, pipe } = spawned
    s.proc = proc
    s.cgroup = cg
    s.uid = runAs && inMusterRange(runAs.uid) ? runAs.uid : null
    s.reason = null
    s.pid = proc.pid
    s.startTime = procStat(proc.pid)?.startTime ?? null
    s.state = 'running'
    s.exitCode = null
    s.startedAt = Date.now()
    // Recorded before the command may run (src/replicas/spawn.ts): a runner killed before the go-ahead leaves no copy.
    this.pauseForTest(s)
    this.save()
    const started = goAhead(proc)
    if (!started) log.warn(`replica ${spec.project}/${spec.replica} (pid ${proc.pid}) was gone before it was told to run`)
    this.opts.onChange()
    // Its last lines are in the log before the runner writes anything after them.
    void proc.exited.then(async (code) => {
      await pipe?.drained(1_000)
      if (s.proc !== proc) return
      const oom = cg !== null && oomKills(cg) > 0
      s.proc = null
      s.pid = null
      s.exitCode = code
      this.writeLog(file, oom ? `--- killed by the kernel: past its memory limit (${spec.memory} MB); exited with ${code}\n` : `--- exited with ${code}\n`)
      if (this.released) return
      await this.ended(s)
      this.save()
      if (s.stopping) {
        s.state = 'stopped'
        return
      }
      s.state = 'failed'
      s.reason = oom ? 'out-of-memory' : null
      this.opts.onChange()
      log.warn(`replica ${spec.project}/${spec.replica} exited with ${code}${oom ? ' (killed for its memory limit)' : ''}`, fields({ project: spec.project, replica: spec.replica }))
      this.scheduleRestart(s)
    })
  }

  private cannotStart(s: Supervised, file: string, why: string): void {
    s.proc = null
    s.state = 'failed'
    s.exitCode = 127
    this.writeLog(file, `cannot start: ${why}\n`)
    this.scheduleRestart(s)
  }

  /** Test-only (MUSTER_TEST_REPLICA_START_PAUSE_MS, docs/tunables.md): holds a start between its spawn and its record, where tests kill the runner. */
  private pauseForTest(s: Supervised): void {
    const ms = tunableNumber('MUSTER_TEST_REPLICA_START_PAUSE_MS')
    if (ms <= 0) return
    log.warn(`test pause: replica ${s.spec.project}/${s.spec.replica} started (pid ${s.pid}) and is not recorded yet; waiting ${ms} ms`)
    Bun.sleepSync(ms)
  }

  private scheduleRestart(s: Supervised): void {
    if (s.stopping || this.released) return
    if (s.startedAt && Date.now() - s.startedAt > this.opts.stableAfterMs) s.restarts = 0
    const delay = Math.min(this.opts.backoffMaxMs, this.opts.backoffStartMs * 2 ** s.restarts)
    s.restarts++
    replicaRestarts.inc()
    this.writeLog(this.logFile(s.spec.project, s.spec.replica), `--- restarting in ${delay} ms\n`)
    s.timer = setTimeout(() => {
      s.timer = null
      if (!s.stopping && !this.released) this.launch(s)
    }, delay)
  }

  private async stop(key: string, s: Supervised): Promise<void> {
    s.stopping = true
    if (s.timer) clearTimeout(s.timer)
    const pid = s.pid
    if (pid !== null) {
      const proc = s.proc
      const startTime = s.startTime ?? ''
      const cg = s.cgroup
      // Our child: its exit is awaited. Adopted: watched in /proc until it is no longer that process.
      const gone = proc ? proc.exited.then(() => {}) : this.until(() => !sameProcess(pid, startTime, bootId()))
      // Every process of the replica gets the TERM (its cgroup, else its group), then the KILL after the grace.
      if (cg) signalCgroup(cg, 'SIGTERM')
      else signalGroup(pid, 'SIGTERM')
      const killer = setTimeout(() => (cg ? void killCgroup(cg) : signalGroup(pid, 'SIGKILL')), this.opts.stopGraceMs)
      await gone
      clearTimeout(killer)
      signalGroup(pid, 'SIGKILL') // anything the replica left behind in its group
      await this.ended(s)
    } else {
      await this.ended(s)
    }
    s.state = 'stopped'
    s.pid = null
    if (this.replicas.get(key) === s) this.replicas.delete(key)
    this.save()
    this.opts.onChange()
  }

  private async until(done: () => boolean): Promise<void> {
    while (!done()) await Bun.sleep(50)
  }

  /** Records every running replica for the next Agent. */
  private save(): void {
    if (!this.opts.stateFile) return
    const boot = bootId()
    const records: ReplicaRecord[] = []
    for (const s of this.replicas.values()) {
      if (s.pid === null || s.startTime === null || s.state !== 'running') continue
      records.push({ project: s.spec.project, replica: s.spec.replica, revision: s.spec.revision, pid: s.pid, startTime: s.startTime, boot, startedAt: s.startedAt, ...(s.cgroup ? { cgroup: s.cgroup } : {}), ...(s.uid !== null ? { uid: s.uid } : {}) })
    }
    try {
      writeFileAtomic(this.opts.stateFile, `${JSON.stringify({ replicas: records }, null, 2)}\n`, 0o600)
    } catch (e) {
      log.warn(`cannot record the running replicas in ${this.opts.stateFile}: ${(e as Error).message}`)
    }
  }

  private writeLog(file: string, data: string | Uint8Array): void {
    try {
      capLog(file, this.opts.maxLogBytes)
      appendFileSync(file, data, { mode: 0o600 })
    } catch {}
  }
}
