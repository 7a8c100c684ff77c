// The watchdog of a trial (docs/upgrading.md): a process the old Agent starts
// from its own binary just before it execs into the new one, so the version
// that worked judges the one on trial. Every 100 ms it looks at the trial
// (same PID and start time), the replicas from before the swap and the health
// file the new Agent writes; when the gate passes it records "done" and the
// new Agent keeps itself; when it fails it records "rolled-back", kills the
// trial, puts versions/current back and — where no service manager restarts the
// Agent — starts the old binary itself. Under systemd the unit restarts the
// killed Agent (Restart=on-failure), and that start reads the verdict.
import type { DataDir } from '../../datadir.ts'
import { log } from '../../log.ts'
import { sameProcess } from '../../replicas/procs.ts'
import { judge, readHealth, trialAlive } from './gate.ts'
import { recordVerdict, readJournal, readVerdict, type Update } from './journal.ts'
import { LAUNCHED_ENV, TRIAL_ENV } from './launch.ts'
import { applyVerdict } from './verdict.ts'

const TICK_MS = 100
/** A watchdog that never sees its trial begin (the old Agent died first) gives up after this. */
const NO_TRIAL_MS = 30_000

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** Starts `u.from.path` as the Agent again (no service manager restarts it), detached, with the trial's arguments. */
export function restartOld(u: Update): number | undefined {
  const env: Record<string, string | undefined> = { ...process.env }
  delete env[LAUNCHED_ENV]
  delete env[TRIAL_ENV]
  try {
    const p = Bun.spawn([u.from.path, ...(u.argv ?? ['muster', 'agent']).slice(1)], { stdio: ['ignore', 'inherit', 'inherit'], env, detached: true })
    p.unref()
    return p.pid
  } catch (e) {
    log.error(`update: cannot start ${u.from.path} again: ${(e as Error).message}`)
    return undefined
  }
}

/** Runs until the trial for `sha256` is judged (or is no longer in the journal). */
export async function runWatchdog(dataDir: DataDir, sha256: string, now: () => number = Date.now): Promise<void> {
  const began = now()
  for (;;) {
    await sleep(TICK_MS)
    const j = readJournal(dataDir)
    const u = j.update
    if (readVerdict(dataDir)) return
    if (j.step !== 'trial' || !u || u.to.sha256 !== sha256) {
      if (j.step === 'swapping' && u?.to.sha256 === sha256 && now() - began < NO_TRIAL_MS) continue
      return
    }
    const verdict = judge(u, readHealth(dataDir), now(), trialAlive(u))
    if (verdict.state === 'wait') continue
    const v = recordVerdict(dataDir, verdict.state === 'pass' ? { sha256, verdict: 'done', by: 'watchdog', at: now() } : { sha256, verdict: 'rolled-back', reason: verdict.reason, by: 'watchdog', at: now() })
    if (v.verdict === 'done') {
      log.info(`update watchdog: ${u.to.version} passed its health check`)
      return
    }
    log.warn(`update watchdog: ${u.to.version} failed its health check (${v.reason}); rolling back to ${u.from.version}`)
    // Kill the trial and wait for it to be gone before anything starts the old binary (its port, its pid file).
    applyVerdict(dataDir, v, now())
    for (let i = 0; i < 100 && u.pid !== undefined && u.startTime && sameProcess(u.pid, u.startTime, u.boot ?? ''); i++) await sleep(50)
    if (!u.systemd) {
      const pid = restartOld(u)
      if (pid) log.info(`update watchdog: started ${u.from.path} again (pid ${pid})`)
    }
    return
  }
}
