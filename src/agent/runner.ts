// The replica runner: each assigned replica is a supervised child process in
// its own process group, its output in a size-capped log file, restarted with
// exponential backoff. `apply` makes the running set match the assignments.
import { appendFileSync, existsSync, mkdirSync, renameSync, statSync } from 'node:fs'
import { join } from 'node:path'
import type { AssignedReplica } from '../projects/assignments.ts'
import { log } from '../log.ts'

export type ReplicaState = 'pending' | 'running' | 'failed' | 'stopped'

export interface RunnerOptions {
  /** Folder for per-replica logs. */
  logDir: string
  /** Bytes a log may grow to before it is rotated to `.1`. */
  maxLogBytes?: number
  /** SIGTERM, then SIGKILL after this long. */
  stopGraceMs?: number
  backoffStartMs?: number
  backoffMaxMs?: number
  /** A replica that ran this long resets its backoff. */
  stableAfterMs?: number
  /** Called when a replica changes state (the Agent reports it early). */
  onChange?: () => void
}

interface Supervised {
  spec: AssignedReplica
  proc: Bun.Subprocess<'ignore', 'pipe', 'pipe'> | null
  state: ReplicaState
  exitCode: number | null
  restarts: number
  startedAt: number
  timer: ReturnType<typeof setTimeout> | null
  stopping: boolean
}

const keyOf = (r: { project: string; replica: number; revision: number }) => `${r.project}/${r.replica}/${r.revision}`

export class Runner {
  private readonly replicas = new Map<string, Supervised>()
  private readonly opts: Required<RunnerOptions>

  constructor(opts: RunnerOptions) {
    this.opts = { maxLogBytes: 1024 * 1024, stopGraceMs: 5000, backoffStartMs: 500, backoffMaxMs: 60_000, stableAfterMs: 30_000, onChange: () => {}, ...opts }
    mkdirSync(this.opts.logDir, { recursive: true, mode: 0o700 })
  }

  /** Starts what is assigned and not running; stops what runs and is no longer assigned. */
  apply(assigned: AssignedReplica[]): void {
    const want = new Map(assigned.map((r) => [keyOf(r), r]))
    for (const [key, s] of this.replicas) if (!want.has(key)) void this.stop(key, s)
    for (const [key, spec] of want) if (!this.replicas.has(key)) this.start(key, spec)
  }

  status(): { project: string; replica: number; revision: number; state: ReplicaState; exitCode: number | null }[] {
    return [...this.replicas.values()].map((s) => ({ project: s.spec.project, replica: s.spec.replica, revision: s.spec.revision, state: s.state, exitCode: s.exitCode }))
  }

  /** Stops every replica (the Agent is stopping). */
  async stopAll(): Promise<void> {
    await Promise.all([...this.replicas].map(([key, s]) => this.stop(key, s)))
  }

  logFile(project: string, replica: number): string {
    return join(this.opts.logDir, `${project}-${replica}.log`)
  }

  private start(key: string, spec: AssignedReplica): void {
    const s: Supervised = { spec, proc: null, state: 'pending', exitCode: null, restarts: 0, startedAt: 0, timer: null, stopping: false }
    this.replicas.set(key, s)
    this.launch(s)
  }

  private launch(s: Supervised): void {
    const { spec } = s
    const file = this.logFile(spec.project, spec.replica)
    this.writeLog(file, `--- ${new Date().toISOString()} starting revision ${spec.revision}: ${spec.command.join(' ')}\n`)
    try {
      s.proc = Bun.spawn(spec.command, {
        env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? '/', ...spec.env, MUSTER_PROJECT: spec.project, MUSTER_REPLICA: String(spec.replica) },
        stdin: 'ignore',
        stdout: 'pipe',
        stderr: 'pipe',
        detached: true, // its own process group, so a stop reaches its children too
      })
    } catch (e) {
      s.proc = null
      s.state = 'failed'
      s.exitCode = 127
      this.writeLog(file, `cannot start: ${(e as Error).message}\n`)
      this.scheduleRestart(s)
      return
    }
    s.state = 'running'
    s.exitCode = null
    s.startedAt = Date.now()
    this.opts.onChange()
    const proc = s.proc
    void this.pump(proc.stdout, file)
    void this.pump(proc.stderr, file)
    void proc.exited.then((code) => {
      if (s.proc !== proc) return
      s.proc = null
      s.exitCode = code
      this.writeLog(file, `--- exited with ${code}\n`)
      if (s.stopping) {
        s.state = 'stopped'
        return
      }
      s.state = 'failed'
      this.opts.onChange()
      log.warn(`replica ${spec.project}/${spec.replica} exited with ${code}`)
      this.scheduleRestart(s)
    })
  }

  private scheduleRestart(s: Supervised): void {
    if (s.stopping) return
    if (s.startedAt && Date.now() - s.startedAt > this.opts.stableAfterMs) s.restarts = 0
    const delay = Math.min(this.opts.backoffMaxMs, this.opts.backoffStartMs * 2 ** s.restarts)
    s.restarts++
    this.writeLog(this.logFile(s.spec.project, s.spec.replica), `--- restarting in ${delay} ms\n`)
    s.timer = setTimeout(() => {
      s.timer = null
      if (!s.stopping) this.launch(s)
    }, delay)
  }

  private async stop(key: string, s: Supervised): Promise<void> {
    s.stopping = true
    if (s.timer) clearTimeout(s.timer)
    const proc = s.proc
    if (proc && proc.exitCode === null) {
      signalGroup(proc.pid, 'SIGTERM')
      const killer = setTimeout(() => signalGroup(proc.pid, 'SIGKILL'), this.opts.stopGraceMs)
      await proc.exited
      clearTimeout(killer)
      signalGroup(proc.pid, 'SIGKILL') // anything the replica left behind in its group
    }
    s.state = 'stopped'
    if (this.replicas.get(key) === s) this.replicas.delete(key)
    this.opts.onChange()
  }

  private async pump(stream: ReadableStream<Uint8Array>, file: string): Promise<void> {
    try {
      for await (const chunk of stream) this.writeLog(file, chunk)
    } catch {}
  }

  private writeLog(file: string, data: string | Uint8Array): void {
    try {
      if (existsSync(file) && statSync(file).size > this.opts.maxLogBytes) renameSync(file, `${file}.1`)
      appendFileSync(file, data, { mode: 0o600 })
    } catch {}
  }
}

function signalGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal)
  } catch {
    try {
      process.kill(pid, signal)
    } catch {}
  }
}
