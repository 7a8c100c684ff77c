// How one start of a replica is made (docs/workloads.md, "Restart or upgrade
// an Agent without stopping its replicas"). The replica's process is a small
// shell that waits for a line on stdin before it becomes the command:
//  1. its cgroup is made (with the project's limits) and its log writer started;
//  2. the shell is spawned, in a session of its own, as the project's uid;
//  3. it is moved into its cgroup;
//  4. the runner records it (PID, start time, cgroup) in its state file;
//  5. only then `goAhead` sends the line, and the command runs.
// The line comes from a pipe only the runner holds: a runner killed anywhere
// before step 5 closes it, the shell reads end-of-file and exits (111) without
// running anything, so a command never runs unrecorded, and the next runner
// starts exactly one copy. (An empty cgroup left by such a crash is removed by
// the next runner's sweep.)
import { closeSync } from 'node:fs'
import type { AssignedReplica } from '../wire/projects.ts'
import { tunable } from '../tunables.ts'
import type { RunAs } from './isolation.ts'
import { enterCgroup, removeCgroup, type Cgroups, type ReplicaCgroup } from './cgroups.ts'
import { openForAppend } from './log-files.ts'
import { startLogPipe, type LogPipe } from './log-pipe.ts'

/** The replica waits here until it is in its cgroup and recorded (a line on stdin), then becomes the command, with private files by default. */
const SHIM = 'read -r _ || exit 111; umask 077; exec "$@" </dev/null'

/** Under a test run, its marker goes on to the replicas, so a replica a test leaves behind is found (docs/testing.md). */
const testRun = (run = tunable('MUSTER_TEST_RUN')): Record<string, string> => (run ? { MUSTER_TEST_RUN: run } : {})

export interface Spawned {
  proc: Bun.Subprocess
  cgroup: ReplicaCgroup | null
  /** The log writer, when the log has one (its `drained` is awaited before the exit line is written). */
  pipe: LogPipe | null
}

/** Steps 1–3: the replica's shell, in its cgroup, waiting for `goAhead`. Throws when it cannot be made (nothing is left behind). */
export function spawnWaiting(spec: AssignedReplica, file: string, maxLogBytes: number, runAs: RunAs | undefined, cgroups: Cgroups | null | undefined): Spawned {
  let fd: number | undefined
  let cg: ReplicaCgroup | null = null
  let proc: Bun.Subprocess | undefined
  // Through a writer of its own that keeps the log capped with no Agent (src/replicas/log-pipe.ts), else the file itself.
  const pipe = startLogPipe(file, maxLogBytes)
  try {
    if (cgroups) cg = cgroups.create(`${spec.project}.${spec.replica}.${spec.revision}.${Date.now()}`, { cpu: spec.cpu, memory: spec.memory })
    fd = pipe?.fd ?? openForAppend(file)
    proc = Bun.spawn(['/bin/sh', '-c', SHIM, 'muster-replica', ...spec.command], {
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: runAs ? runAs.home : (process.env.HOME ?? '/'), ...spec.env, MUSTER_PROJECT: spec.project, MUSTER_REPLICA: String(spec.replica), ...testRun() },
      // Only the go-ahead line (the command itself gets /dev/null).
      stdin: 'pipe',
      // Not a pipe to the Agent: the replica writes on when the Agent is gone.
      stdout: fd,
      stderr: fd,
      // setsid(): its own session and process group, so it outlives the Agent and a stop reaches its children.
      detached: true,
      ...(runAs ? { uid: runAs.uid, gid: runAs.gid, cwd: runAs.home } : {}),
    })
    if (cg && !enterCgroup(cg, proc.pid)) throw new Error(`cannot move it into its cgroup ${cg.dir}`)
    return { proc, cgroup: cg, pipe }
  } catch (e) {
    proc?.kill('SIGKILL')
    pipe?.abandon()
    if (cg) removeCgroup(cg)
    throw e
  } finally {
    if (pipe) pipe.handedOver()
    else if (fd !== undefined) closeSync(fd)
  }
}

/** Step 5: the command may run now. False when the shell is gone already. */
export function goAhead(proc: Bun.Subprocess): boolean {
  try {
    const go = proc.stdin as Bun.FileSink
    go.write('\n')
    void go.end()
    return true
  } catch {
    return false
  }
}
