// The Agent's part of a rollout (docs/upgrading.md "What a node does"):
//  1. a heartbeat answer says `update`: fetch the directive; it must be signed
//     by a trust key, for this node, unexpired, and carry a release manifest
//     signed by a release key this node trusts, for its architecture, with a
//     sequence not below what it installed and not one it rolled back;
//  2. fetch the binary (a mirror, else the Platform: a delta or the compressed
//     binary) into versions/, checked against the manifest;
//  3. point versions/current at it, start the watchdog from this binary,
//     leave the replicas running, and exec the new binary in this process;
//  4. the new binary (the trial) heartbeats, adopts the replicas and writes
//     its health; the watchdog keeps it or rolls it back (./watchdog.ts).
// Every step is in the journal first (./journal.ts) and reported to the Platform.
import { arch as osArch } from 'node:os'
import type { Agent } from '../agent.ts'
import type { HeartbeatAnswer } from '../../wire/nodes.ts'
import { log } from '../../log.ts'
import { VERSION } from '../../version.ts'
import { checkDirective } from '../../signed/documents.ts'
import { verifyManifest, type Manifest } from '../../signed/releases.ts'
import type { DirectivePayload as Directive, UpdateReport } from '../../wire/rollouts.ts'
import { apiClient, apiFetcher } from '../connect.ts'
import { bootId, procStat, sameProcess } from '../../replicas/procs.ts'
import { readRecords } from '../../replicas/records.ts'
import { REPLICAS_FILE } from '../workloads.ts'
import { execInPlace, ownArgv, ownBinary } from './exec.ts'
import { fetchRelease, fileSha256, type Source } from './fetch-release.ts'
import { judge, readHealth, writeHealth } from './gate.ts'
import { CURRENT_LINK, recordVerdict, pointLink, readJournal, readVerdict, releaseDir, writeJournal, type Journal, type ReleaseRef, type Update } from './journal.ts'
import { LAUNCHED_ENV, TRIAL_ENV } from './launch.ts'
import { readReleaseKeys } from './release-keys.ts'
import { applyVerdict } from './verdict.ts'
import { restartOld } from './watchdog.ts'

/** How the Agent is started by a service manager that restarts it (systemd sets INVOCATION_ID; the unit's process is a child of PID 1). */
export const underSystemd = () => Boolean(process.env.INVOCATION_ID) && process.ppid === 1

/**
 * Starts the watchdog as an orphan: through a shell that backgrounds it and
 * exits (and is waited for), so the new image this process execs into — which
 * knows nothing of its children — leaves no zombie behind; init (or systemd)
 * reaps it. Its PID, or undefined when it could not start.
 */
async function startWatchdog(argv: string[], env: Record<string, string | undefined>): Promise<number | undefined> {
  try {
    const sh = Bun.spawn(['/bin/sh', '-c', '"$@" >&2 </dev/null & echo $!', 'sh', ...argv], { stdin: 'ignore', stdout: 'pipe', stderr: 'inherit', env, detached: true })
    const [out, code] = [await new Response(sh.stdout).text(), await sh.exited]
    const pid = Number(out.trim())
    return code === 0 && Number.isInteger(pid) && pid > 1 ? pid : undefined
  } catch (e) {
    log.warn(`update: cannot start the watchdog: ${(e as Error).message}; the new Agent judges itself`)
    return undefined
  }
}

/** How long after refusing a directive the Agent asks again. */
const REFUSED_QUIET_MS = 10_000

const archOf = (): string => (osArch() === 'x64' || osArch() === 'arm64' ? osArch() : process.arch)

export interface UpdaterOptions {
  /** This process is the new Agent on trial. */
  trial?: Update
  /** Milliseconds each journal step waits after it is written (tests kill the Agent at each one). */
  stepDelayMs?: number
}

export class Updater {
  private busy = false
  /** After a directive was refused, none is asked for before this (a bad one is not fetched every heartbeat). */
  private quietUntil = 0
  private ownSha: Promise<string> | undefined
  private stopped = false
  private trialTimer: ReturnType<typeof setInterval> | undefined
  /** Settles with a line when this Agent cannot go on (an exec that failed twice): `muster agent` exits 1. */
  readonly fatal: Promise<string>
  private fatalLine: ((line: string) => void) | undefined

  constructor(
    private readonly agent: Agent,
    private readonly opts: UpdaterOptions = {},
  ) {
    this.fatal = new Promise((r) => (this.fatalLine = r))
  }

  private get dataDir() {
    return this.agent.dataDir
  }

  private api() {
    return apiClient(this.agent.connection(), this.agent.nodeCredential).updates
  }

  /** SHA-256 of the binary this process runs (once; the base of a delta). */
  binarySha(): Promise<string> {
    this.ownSha ??= fileSha256(ownBinary())
    return this.ownSha
  }

  start(): void {
    this.agent.onHeartbeat((a) => this.afterHeartbeat(a))
    if (this.opts.trial) this.startTrial(this.opts.trial)
    void this.sendFacts()
  }

  stop(): void {
    this.stopped = true
    if (this.trialTimer) clearInterval(this.trialTimer)
  }

  private afterHeartbeat(a: HeartbeatAnswer): void {
    if (this.stopped) return
    const j = readJournal(this.dataDir)
    if (j.outcome) void this.sendOutcome()
    if (this.opts.trial && j.step === 'trial') {
      const runner = this.agent.workloads?.runner
      writeHealth(this.dataDir, { pid: process.pid, version: VERSION, heartbeatAt: Date.now(), adopted: runner ? runner.pids().map((p) => p.pid) : [] })
      return
    }
    if (a.update && !this.busy && !j.step && Date.now() >= this.quietUntil) void this.run()
  }

  /** What this Agent runs, for the Platform's plan: architecture, version, binary, sequence, skipped releases. */
  async sendFacts(): Promise<void> {
    try {
      const j = readJournal(this.dataDir)
      await this.api().agentFacts({ arch: archOf() as 'x64', version: VERSION, binarySha256: await this.binarySha(), sequence: j.sequence, skipped: j.skipped.map((s) => s.sha256) })
    } catch (e) {
      log.debug(`update: could not tell the Platform what this Agent runs: ${(e as Error).message}`)
    }
  }

  /** Reports the last update's outcome; the journal forgets it once the Platform has it. */
  private async sendOutcome(): Promise<void> {
    const o = readJournal(this.dataDir).outcome
    if (!o) return
    try {
      await this.api().report({ rollout: o.rollout, sha256: o.sha256, state: o.state, version: o.version, ...(o.error ? { error: o.error.slice(0, 1000) } : {}) })
      const j = readJournal(this.dataDir)
      if (j.outcome?.at === o.at) {
        delete j.outcome
        writeJournal(this.dataDir, j)
      }
      await this.sendFacts()
    } catch (e) {
      log.debug(`update: could not report the outcome yet: ${(e as Error).message}`)
    }
  }

  private async report(r: UpdateReport): Promise<void> {
    try {
      await this.api().report(r)
    } catch (e) {
      log.debug(`update: could not report ${r.state}: ${(e as Error).message}`)
    }
  }

  private async step(j: Journal): Promise<void> {
    writeJournal(this.dataDir, j)
    if (this.opts.stepDelayMs) await new Promise((r) => setTimeout(r, this.opts.stepDelayMs))
  }

  /** Fetches the directive and carries it out; every refusal is reported with its reason. */
  async run(): Promise<void> {
    if (this.busy) return
    this.busy = true
    try {
      const answer = await this.api().directive()
      if (!answer.directive) return
      let check = checkDirective(answer.directive, this.agent.trustKeys, this.agent.config.nodeId, Date.now())
      if (!check.ok && check.unknownKey && (await this.agent.refreshForUnknownKid())) check = checkDirective(answer.directive, this.agent.trustKeys, this.agent.config.nodeId, Date.now())
      if (!check.ok) {
        log.warn(`update: refused a directive: ${check.reason}`)
        this.quietUntil = Date.now() + REFUSED_QUIET_MS
        return
      }
      await this.carryOut(check.directive)
    } catch (e) {
      log.warn(`update: ${(e as Error).message}`)
    } finally {
      this.busy = false
    }
  }

  private async carryOut(d: Directive): Promise<void> {
    let m = verifyManifest(d.release, readReleaseKeys(this.dataDir))
    // A key endorsed since the last trust refresh: refresh once, then check again.
    if (!m.ok && /does not trust/.test(m.reason) && (await this.agent.refreshTrust())) m = verifyManifest(d.release, readReleaseKeys(this.dataDir))
    const sha = (d.release as { manifest?: { sha256?: unknown } })?.manifest?.sha256
    const base = { rollout: d.rollout, sha256: typeof sha === 'string' && /^[0-9a-f]{64}$/.test(sha) ? sha : '0'.repeat(64) }
    if (!m.ok) return this.refuse(base, 'failed', m.reason)
    const man = m.value.manifest
    const j = readJournal(this.dataDir)
    const own = await this.binarySha()
    if (man.sha256 === own) return void (await this.report({ ...base, state: 'done', version: man.version }))
    if (man.arch !== archOf()) return this.refuse(base, 'failed', `the release is for ${man.arch}; this node is ${archOf()}`)
    if (man.sequence < j.sequence) return this.refuse(base, 'failed', `release sequence ${man.sequence} is lower than the ${j.sequence} installed here (an older release replayed?); release it again under a new sequence to go back`)
    if (man.sequence === j.sequence && j.current?.sha256 !== man.sha256) return this.refuse(base, 'failed', `release sequence ${man.sequence} is installed here already with another binary`)
    const skipped = j.skipped.find((s) => s.sha256 === man.sha256 && s.sequence === man.sequence)
    if (skipped) return this.refuse(base, 'skipped', `this node rolled ${man.version} back (${skipped.reason}); it installs it again only when it is released again`)
    await this.install(d, man)
  }

  private async refuse(base: { rollout: string; sha256: string }, state: 'failed' | 'skipped', reason: string): Promise<void> {
    log.warn(`update: ${reason}`)
    await this.report({ ...base, state, error: reason })
  }

  private async install(d: Directive, man: Manifest): Promise<void> {
    const dataDir = this.dataDir
    const j = readJournal(dataDir)
    const to: ReleaseRef = { version: man.version, sequence: man.sequence, sha256: man.sha256, size: man.size, dir: releaseDir(man) }
    const u: Update = { rollout: d.rollout, to, from: { version: VERSION, release: j.current, path: ownBinary() }, startedAt: Date.now(), healthTimeoutMs: d.healthTimeoutMs }
    const report = (state: UpdateReport['state'], error?: string) => this.report({ rollout: d.rollout, sha256: man.sha256, state, version: man.version, ...(error ? { error } : {}) })
    const fail = async (error: string) => {
      const now = readJournal(dataDir)
      delete now.step
      delete now.update
      writeJournal(dataDir, now)
      log.warn(`update: ${man.version} not installed: ${error}`)
      await report('failed', error)
    }
    // 1. download
    await this.step({ ...j, step: 'downloading', update: u })
    await report('downloading')
    const conn = this.agent.connection()
    const credential = this.agent.nodeCredential
    const fromSha = await this.binarySha()
    const platform: Source = {
      label: 'the Platform',
      fetch: (signal) => apiFetcher(conn)(`${conn.platformUrl.replace(/\/+$/, '')}/api/v1/nodes/self/release/${man.sha256}?from=${fromSha}`, { headers: { authorization: `Bearer ${credential}` }, signal }),
    }
    const mirrors: Source[] = d.mirrors.map((url) => ({ label: `the mirror ${url}`, fetch: (signal) => fetch(url, { signal, redirect: 'follow' }) }))
    let bin: string
    try {
      bin = await fetchRelease(dataDir, man, [...mirrors, platform], ownBinary(), (label) => log.info(`update: fetching ${man.version} from ${label}`), (why) => log.warn(`update: ${why}`))
    } catch (e) {
      return fail((e as Error).message)
    }
    await this.step({ ...readJournal(dataDir), step: 'staged', update: u })
    await report('installing')
    // 2. the swap: versions/current names the new release before anything stops
    await this.step({ ...readJournal(dataDir), step: 'swapping', update: u })
    pointLink(dataDir, CURRENT_LINK, to.dir)
    await report('restarting')
    // 3. the replicas stay; this Agent stops; the watchdog (this binary) starts; the journal names the trial; exec
    const self = procStat(process.pid)
    if (!self) return this.undoSwap(u, 'cannot read this process from /proc')
    await this.agent.stop({ stopReplicas: false })
    this.stop()
    const replicas = readRecords(dataDir.path(REPLICAS_FILE)).map((r) => ({ project: r.project, replica: r.replica, pid: r.pid, startTime: r.startTime }))
    const argv = ownArgv()
    const trial: Update = { ...u, pid: process.pid, startTime: self.startTime, boot: bootId(), deadline: Date.now() + d.healthTimeoutMs, replicas, argv, systemd: underSystemd() }
    const watchEnv: Record<string, string | undefined> = { ...process.env }
    delete watchEnv[LAUNCHED_ENV]
    delete watchEnv[TRIAL_ENV]
    const watchdog = await startWatchdog([u.from.path, 'agent', '--data-dir', dataDir.root, '--update-watch', to.sha256], watchEnv)
    const wd = watchdog ? procStat(watchdog) : null
    await this.step({ ...readJournal(dataDir), step: 'trial', update: { ...trial, ...(watchdog && wd ? { watchdog: { pid: watchdog, startTime: wd.startTime } } : {}) } })
    log.info(`update: starting ${man.version} in this process (pid ${process.pid}); ${replicas.length} replica(s) keep running; the watchdog (pid ${watchdog ?? '?'}) judges it within ${Math.round(d.healthTimeoutMs / 1000)} s`)
    const why = await execInPlace(bin, [bin, ...argv.slice(1)], { ...process.env, [LAUNCHED_ENV]: '1', [TRIAL_ENV]: to.sha256 })
    // Still here: the new binary could not even start. Roll back and run this binary again.
    const v = recordVerdict(dataDir, { sha256: to.sha256, verdict: 'rolled-back', reason: `the new binary did not start (${why})`, by: 'agent', at: Date.now() })
    applyVerdict(dataDir, v)
    const again = await execInPlace(u.from.path, argv, { ...process.env, [LAUNCHED_ENV]: '1' })
    this.fatalLine?.(`the update failed and this Agent could not start again (${again}); start it again`)
  }

  private async undoSwap(u: Update, why: string): Promise<void> {
    pointLink(this.dataDir, CURRENT_LINK, u.from.release?.dir ?? null)
    const j = readJournal(this.dataDir)
    delete j.step
    delete j.update
    writeJournal(this.dataDir, j)
    await this.report({ rollout: u.rollout, sha256: u.to.sha256, state: 'failed', version: u.to.version, error: why })
  }

  /**
   * This process is the new Agent on trial: the health file after each
   * heartbeat (above); the watchdog's verdict, carried out here when it keeps
   * this version; and, should the watchdog be gone, the judgement made here.
   */
  private startTrial(u: Update): void {
    log.info(`update: ${u.to.version} on trial until ${new Date(u.deadline ?? Date.now()).toISOString()}`)
    const tick = () => {
      if (this.stopped) return
      const v = readVerdict(this.dataDir)
      if (v?.verdict === 'done') {
        clearInterval(this.trialTimer)
        applyVerdict(this.dataDir, v)
        void this.sendOutcome()
        return
      }
      if (v?.verdict === 'rolled-back') return void this.rollBackSelf(u, v.reason ?? 'rolled back')
      const watchdogAlive = u.watchdog && sameProcess(u.watchdog.pid, u.watchdog.startTime, u.boot ?? bootId())
      if (watchdogAlive) return
      const r = judge(u, readHealth(this.dataDir), Date.now(), true)
      if (r.state === 'wait') return
      recordVerdict(this.dataDir, r.state === 'pass' ? { sha256: u.to.sha256, verdict: 'done', by: 'trial', at: Date.now() } : { sha256: u.to.sha256, verdict: 'rolled-back', reason: r.reason, by: 'trial', at: Date.now() })
    }
    this.trialTimer = setInterval(tick, 200)
  }

  /** Rolled back while this process runs the new binary: run the old one again, in this process. */
  private async rollBackSelf(u: Update, reason: string): Promise<void> {
    if (this.trialTimer) clearInterval(this.trialTimer)
    this.stopped = true
    log.warn(`update: ${u.to.version} rolled back (${reason}); starting ${u.from.version} again`)
    await this.agent.stop({ stopReplicas: false })
    const v = readVerdict(this.dataDir)
    if (v) applyVerdict(this.dataDir, v)
    const why = await execInPlace(u.from.path, u.argv ?? ownArgv(), { ...process.env, [LAUNCHED_ENV]: '1', [TRIAL_ENV]: undefined })
    if (!u.systemd && restartOld(u)) return this.fatalLine?.(`started ${u.from.path} again in another process (${why})`)
    this.fatalLine?.(`could not start ${u.from.path} again (${why})`)
  }
}
