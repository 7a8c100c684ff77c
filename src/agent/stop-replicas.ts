// `muster agent --stop-replicas`: stop this node's replicas on purpose (they
// outlive the Agent otherwise). A running Agent is asked with SIGUSR2 (it
// stops every replica, then exits); with none running, the replicas the last
// Agent recorded are adopted — only the very processes it started — and stopped.
import { chownSync, statSync } from 'node:fs'
import { DataDir } from '../datadir.ts'
import { MusterError } from '../errors.ts'
import { runningAgentPid } from './agent-pid.ts'
import { Runner } from '../replicas/runner.ts'
import { procStat } from '../replicas/procs.ts'
import { LOG_DIR, REPLICAS_FILE } from './workloads.ts'

export interface StopReplicasResult {
  /** The running Agent that was asked (and has exited), if there was one. */
  agentPid?: number
  /** Replicas stopped here (none when a running Agent stopped them). */
  stopped: { project: string; replica: number; pid: number }[]
}

export async function stopReplicas(root: string, waitMs = 60_000): Promise<StopReplicasResult> {
  const dataDir = new DataDir(root)
  const agentPid = runningAgentPid(dataDir)
  if (agentPid !== undefined) {
    process.kill(agentPid, 'SIGUSR2')
    const deadline = performance.now() + waitMs
    while (procStat(agentPid) && procStat(agentPid)!.state !== 'Z') {
      if (performance.now() > deadline) throw new MusterError('platform-unreachable', `The Agent (pid ${agentPid}) did not stop its replicas within ${waitMs / 1000} s; see its log.`)
      await Bun.sleep(100)
    }
    return { agentPid, stopped: [] }
  }
  if (!dataDir.exists(REPLICAS_FILE)) return { stopped: [] }
  const runner = new Runner({ logDir: dataDir.ensureDir(...LOG_DIR), stateFile: dataDir.path(REPLICAS_FILE), stopGraceMs: 5000 })
  const stopped = runner.pids().map((p) => ({ project: p.project, replica: p.replica, pid: p.pid }))
  await runner.stopAll()
  // Run as root on a data directory that belongs to the Agent's account: what was written here stays the Agent's.
  const owner = statSync(dataDir.root)
  if (process.getuid?.() === 0 && owner.uid !== 0) {
    for (const f of [dataDir.path(REPLICAS_FILE), ...stopped.map((p) => runner.logFile(p.project, p.replica))]) {
      try {
        chownSync(f, owner.uid, owner.gid)
      } catch {}
    }
  }
  return { stopped }
}
