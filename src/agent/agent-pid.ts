// worker/agent.pid: which process is this data directory's Agent (its PID, start
// time and boot, so a recycled PID is never taken for it). `muster agent
// --stop-replicas` uses it to ask a running Agent to stop its replicas.
import type { DataDir } from '../datadir.ts'
import { bootId, procStat, sameProcess } from '../replicas/procs.ts'

export const AGENT_PID_FILE = 'worker/agent.pid'

export function writeAgentPid(dataDir: DataDir): void {
  const startTime = procStat(process.pid)?.startTime
  if (!startTime) return
  dataDir.writeSecret(AGENT_PID_FILE, `${JSON.stringify({ pid: process.pid, startTime, boot: bootId() })}\n`)
}

export function clearAgentPid(dataDir: DataDir): void {
  const running = runningAgentPid(dataDir)
  if (running === process.pid) dataDir.writeSecret(AGENT_PID_FILE, '{}\n')
}

/** The PID of the Agent running for this data directory, or undefined. */
export function runningAgentPid(dataDir: DataDir): number | undefined {
  try {
    const v = JSON.parse(dataDir.readSecretText(AGENT_PID_FILE) ?? '{}') as { pid?: unknown; startTime?: unknown; boot?: unknown }
    if (typeof v.pid !== 'number' || typeof v.startTime !== 'string' || typeof v.boot !== 'string') return undefined
    return sameProcess(v.pid, v.startTime, v.boot) ? v.pid : undefined
  } catch {
    return undefined
  }
}
