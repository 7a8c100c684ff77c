// Carrying out a verdict on a trial (docs/upgrading.md): kept — versions/current
// stays on the new release, the journal records it as installed (its sequence
// the lowest this node takes from now on) and the release before it is kept
// beside it — or rolled back — versions/current goes back to what ran before,
// the release is skipped on this node until it is released again, and its
// folder is removed. Idempotent: the verdict file stays until the journal says
// what it decided, so a kill -9 half way is finished by whoever starts next.
import { rmSync } from 'node:fs'
import type { DataDir } from '../../datadir.ts'
import { log } from '../../log.ts'
import { sameProcess } from '../../replicas/procs.ts'
import { clearVerdict, CURRENT_LINK, PREVIOUS_LINK, pointLink, pruneVersions, readJournal, VERSIONS_DIR, writeJournal, type Journal, type Verdict } from './journal.ts'

/** Applies `v` to the trial the journal holds (nothing when it holds none, or another). */
export function applyVerdict(dataDir: DataDir, v: Verdict, now = Date.now()): Journal {
  const j = readJournal(dataDir)
  const u = j.update
  if (j.step !== 'trial' || !u || u.to.sha256 !== v.sha256) {
    clearVerdict(dataDir)
    return j
  }
  if (v.verdict === 'done') {
    pointLink(dataDir, CURRENT_LINK, u.to.dir)
    pointLink(dataDir, PREVIOUS_LINK, u.from.release?.dir ?? null)
    const next: Journal = { v: 1, sequence: Math.max(j.sequence, u.to.sequence), current: u.to, skipped: j.skipped, outcome: { rollout: u.rollout, state: 'done', version: u.to.version, sha256: u.to.sha256, at: now } }
    if (j.service) next.service = j.service
    writeJournal(dataDir, next)
    clearVerdict(dataDir)
    const removed = pruneVersions(dataDir, [u.to.dir, u.from.release?.dir])
    log.info(`update: ${u.to.version} (sequence ${u.to.sequence}) passed its health check and is installed${removed.length ? `; removed ${removed.join(', ')}` : ''}`)
    return next
  }
  // Rolled back: the trial must not run on (the watchdog or a restarted Agent stops it; the trial itself execs the old binary next).
  if (u.pid !== undefined && u.pid !== process.pid && u.startTime && sameProcess(u.pid, u.startTime, u.boot ?? '')) {
    try {
      process.kill(u.pid, 'SIGKILL')
    } catch {}
  }
  pointLink(dataDir, CURRENT_LINK, u.from.release?.dir ?? null)
  const reason = v.reason ?? 'the new Agent failed its health check'
  const skipped = [...j.skipped.filter((s) => s.sha256 !== u.to.sha256), { sha256: u.to.sha256, sequence: u.to.sequence, version: u.to.version, reason, at: new Date(now).toISOString() }].slice(-32)
  const next: Journal = { v: 1, sequence: j.sequence, current: u.from.release, skipped, outcome: { rollout: u.rollout, state: 'rolled-back', version: u.to.version, sha256: u.to.sha256, error: reason, at: now } }
  if (j.service) next.service = j.service
  writeJournal(dataDir, next)
  clearVerdict(dataDir)
  rmSync(dataDir.path(VERSIONS_DIR, u.to.dir), { recursive: true, force: true })
  log.warn(`update: ${u.to.version} rolled back (${reason}); ${u.from.version} runs again, and this node skips that release until it is released again`)
  return next
}
