// The health gate of a new Agent (docs/upgrading.md): within the deadline the
// new binary, still the same process (no crash loop: the PID and start time the
// old Agent handed over), must have heartbeated at its new version and adopted
// every replica that ran before the swap, and every one of them must still be
// the same process. Judged by the watchdog (the old binary's code), by an Agent
// started after the trial died, or by the trial itself when the watchdog is gone.
import { readFileSync } from 'node:fs'
import type { DataDir } from '../../datadir.ts'
import { bootId, sameProcess } from '../../replicas/procs.ts'
import { HEALTH_FILE, writeDurable, type Update } from './journal.ts'

/** What the trial writes after each heartbeat the Platform accepted. */
export interface Health {
  pid: number
  version: string
  heartbeatAt: number
  adopted: number[]
}

/** How long the new Agent must stay healthy before it is kept. */
export const STABLE_MS = 3_000

export type Judgement = { state: 'pass' } | { state: 'wait' } | { state: 'fail'; reason: string }

export function readHealth(dataDir: DataDir): Health | undefined {
  try {
    const h = JSON.parse(readFileSync(dataDir.path(HEALTH_FILE), 'utf8')) as Health
    return Number.isInteger(h?.pid) && typeof h.version === 'string' && Array.isArray(h.adopted) ? h : undefined
  } catch {
    return undefined
  }
}

export function writeHealth(dataDir: DataDir, h: Health): void {
  writeDurable(dataDir.path(HEALTH_FILE), `${JSON.stringify(h)}\n`)
}

/** The trial process is alive: the PID still has the start time it had when the old Agent exec'd. */
export function trialAlive(u: Update): boolean {
  return u.pid !== undefined && u.startTime !== undefined && sameProcess(u.pid, u.startTime, u.boot ?? bootId())
}

/** Judges the trial `u` at `now` from what can be seen: the process, the replicas, the health file. */
export function judge(u: Update, health: Health | undefined, now: number, alive = trialAlive(u)): Judgement {
  const started = (u.deadline ?? now) - u.healthTimeoutMs
  const secs = Math.round(u.healthTimeoutMs / 1000)
  if (!alive) return { state: 'fail', reason: `the new Agent (${u.to.version}) exited during its health check` }
  for (const r of u.replicas ?? []) {
    if (!sameProcess(r.pid, r.startTime, u.boot ?? bootId())) return { state: 'fail', reason: `replica ${r.project}/${r.replica} (pid ${r.pid}) stopped during the health check of ${u.to.version}` }
  }
  const beat = health !== undefined && health.pid === u.pid && health.version === u.to.version && health.heartbeatAt >= started
  const missing = (u.replicas ?? []).filter((r) => !health?.adopted.includes(r.pid))
  if (beat && missing.length === 0) return now - started >= Math.min(STABLE_MS, u.healthTimeoutMs / 2) ? { state: 'pass' } : { state: 'wait' }
  if (now < (u.deadline ?? now)) return { state: 'wait' }
  if (!beat) return { state: 'fail', reason: `the new Agent did not heartbeat at ${u.to.version} within ${secs} s` }
  return { state: 'fail', reason: `the new Agent did not adopt ${missing.map((r) => `${r.project}/${r.replica} (pid ${r.pid})`).join(', ')} within ${secs} s` }
}
