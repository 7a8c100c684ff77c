// What `muster agent` runs (docs/upgrading.md "Where versions live"): the
// service starts the installed binary (/usr/local/bin/muster under install.sh),
// which reads the update journal first and
//  1. finishes a verdict on a trial that a kill -9 left half applied;
//  2. judges a trial whose process is gone (it exited, or the machine or the
//     service restarted during the health check): rolled back, unless the
//     watchdog is alive and decides first;
//  3. undoes an update interrupted before its trial (a partial download, a
//     half-made swap): the version that ran keeps running, and the Platform,
//     which still waits for the node, asks again;
//  4. then replaces itself (execve, same PID) with versions/current when that
//     link names a release — unless the installed binary was installed again
//     since (another version at the service's path: install.sh wins).
// The trial itself (this process exec'd into the new binary) is told so.
import { existsSync, readdirSync, realpathSync, rmSync } from 'node:fs'
import type { DataDir } from '../../datadir.ts'
import { log } from '../../log.ts'
import type { TunableName } from '../../tunables.ts'
import { VERSION } from '../../version.ts'
import { procStat, sameProcess } from '../../replicas/procs.ts'
import { ownArgv, ownBinary, execInPlace } from './exec.ts'
import { trialAlive } from './gate.ts'
import { CURRENT_LINK, currentBinary, recordVerdict, pointLink, readJournal, readVerdict, VERSIONS_DIR, writeJournal, type Update } from './journal.ts'
import { applyVerdict } from './verdict.ts'

export const LAUNCHED_ENV = 'MUSTER_LAUNCHED' satisfies TunableName
export const TRIAL_ENV = 'MUSTER_UPDATE_TRIAL' satisfies TunableName

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** Whether this process is the trial the journal names (exec'd by the Agent before it). */
function isTrial(u: Update): boolean {
  return u.pid === process.pid && u.startTime === procStat(process.pid)?.startTime && process.env[TRIAL_ENV] === u.to.sha256
}

/** Removes staging files a download left (a kill -9 during it). */
function dropStaging(dataDir: DataDir): void {
  try {
    for (const f of readdirSync(dataDir.path(VERSIONS_DIR))) if (f.startsWith('.staging-') || f.includes('.tmp-')) rmSync(dataDir.path(VERSIONS_DIR, f), { force: true, recursive: true })
  } catch {}
}

export interface Launch {
  /** This process is the new Agent on trial. */
  trial?: Update
}

/** Settles what the journal left and execs versions/current when it should run instead; returns when this binary runs. */
export async function prepareLaunch(dataDir: DataDir, now: () => number = Date.now): Promise<Launch> {
  // 1. a verdict recorded, not yet carried out
  const v = readVerdict(dataDir)
  if (v) applyVerdict(dataDir, v, now())
  let j = readJournal(dataDir)
  // 2. a trial
  if (j.step === 'trial' && j.update) {
    const u = j.update
    if (isTrial(u)) return { trial: u }
    if (trialAlive(u)) return {} // another process is the trial (the pid file check refuses a second Agent)
    const watchdogAlive = () => !!u.watchdog && sameProcess(u.watchdog.pid, u.watchdog.startTime, u.boot ?? '')
    const until = (u.deadline ?? now()) + 10_000
    while (watchdogAlive() && !readVerdict(dataDir) && now() < until) await sleep(100)
    const decided = readVerdict(dataDir) ?? recordVerdict(dataDir, { sha256: u.to.sha256, verdict: 'rolled-back', reason: `the new Agent (${u.to.version}) stopped during its health check (it exited, or it was restarted)`, by: 'agent start', at: now() })
    j = applyVerdict(dataDir, decided, now())
  }
  // 3. an update interrupted before its trial
  if (j.step && j.step !== 'trial') {
    const step = j.step
    const to = j.update?.to.version
    if (step === 'swapping') pointLink(dataDir, CURRENT_LINK, j.current?.dir ?? null)
    dropStaging(dataDir)
    delete j.step
    delete j.update
    writeJournal(dataDir, j)
    log.warn(`update: the update to ${to ?? '?'} was interrupted (${step}); the running version stays, and it starts again when the Platform asks`)
  }
  dropStaging(dataDir)
  // 4. which binary runs
  const self = ownBinary()
  const versions = `${realpathSync(dataDir.ensureDir(VERSIONS_DIR))}/`
  const fromVersions = self.startsWith(versions)
  if (!fromVersions && process.env[LAUNCHED_ENV] === undefined) {
    // The service's own binary: another version there than last time means it was installed again, and it runs.
    const reinstalled = j.service !== undefined && j.service.path === self && j.service.version !== VERSION
    if (reinstalled && currentBinary(dataDir)) {
      pointLink(dataDir, CURRENT_LINK, null)
      log.info(`update: ${self} was installed again (${j.service!.version} → ${VERSION}); it runs instead of the rolled-out ${j.current?.version ?? 'release'}`)
      j.current = null
    }
    if (j.service?.path !== self || j.service.version !== VERSION || reinstalled) {
      j.service = { path: self, version: VERSION }
      writeJournal(dataDir, j)
    }
  }
  const target = currentBinary(dataDir)
  if (!target) {
    if (j.current) {
      // versions/current removed by hand (docs/upgrading.md): the installed binary runs.
      j.current = null
      writeJournal(dataDir, j)
    }
    return {}
  }
  if (realpathSync(target) === self || process.env[LAUNCHED_ENV] !== undefined) return {}
  if (!existsSync(target)) return {}
  const why = await execInPlace(target, [target, ...ownArgv().slice(1)], { ...process.env, [LAUNCHED_ENV]: '1' })
  log.warn(`update: cannot start ${target} (${why}); running ${self} instead`)
  return {}
}
