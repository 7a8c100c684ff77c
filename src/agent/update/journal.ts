// The node's update journal (docs/upgrading.md "What a node does"):
// worker/update.json says what runs, the highest release sequence ever
// installed, the releases rolled back here, and the step of an update under
// way; every write is a whole new file (temp, fsync, rename, fsync of the
// folder), so a kill -9 or a power loss leaves the old journal or the new one,
// never half of one. Binaries live in versions/<version>-<sequence>/muster,
// and versions/current is a link to the folder that runs (none: the binary the
// service starts, /usr/local/bin/muster under install.sh).
import { closeSync, existsSync, fsyncSync, linkSync, mkdirSync, openSync, readdirSync, readFileSync, readlinkSync, renameSync, rmSync, symlinkSync, unlinkSync, writeSync } from 'node:fs'
import { dirname, join } from 'node:path'
import type { DataDir } from '../../datadir.ts'

export const JOURNAL_FILE = 'worker/update.json'
export const VERDICT_FILE = 'worker/update-verdict.json'
export const HEALTH_FILE = 'worker/update-health.json'
export const VERSIONS_DIR = 'versions'
export const CURRENT_LINK = 'versions/current'
export const PREVIOUS_LINK = 'versions/previous'

export type Step = 'downloading' | 'staged' | 'swapping' | 'trial'

export interface ReleaseRef {
  version: string
  sequence: number
  sha256: string
  size: number
  /** The folder under versions/ that holds it. */
  dir: string
}

export interface Skipped {
  sha256: string
  sequence: number
  version: string
  reason: string
  at: string
}

export interface TrialReplica {
  project: string
  replica: number
  pid: number
  startTime: string
}

export interface Update {
  rollout: string
  to: ReleaseRef
  /** What ran before: the release (or null for the service's own binary) and the file it ran from. */
  from: { version: string; release: ReleaseRef | null; path: string }
  startedAt: number
  healthTimeoutMs: number
  /** Set with the trial step: the process that execs into the new binary (its PID and start time stay). */
  pid?: number
  startTime?: string
  boot?: string
  deadline?: number
  replicas?: TrialReplica[]
  watchdog?: { pid: number; startTime: string }
  argv?: string[]
  systemd?: boolean
}

export interface Outcome {
  rollout: string
  state: 'done' | 'failed' | 'rolled-back' | 'skipped'
  version: string
  sha256: string
  error?: string
  at: number
}

export interface Journal {
  v: 1
  /** The highest release sequence this node installed (0: none yet). */
  sequence: number
  current: ReleaseRef | null
  skipped: Skipped[]
  step?: Step
  update?: Update
  /** The last update's outcome, until the Platform has heard it. */
  outcome?: Outcome
  /** The binary the service starts (install.sh's) and its version when last seen: another version there means it was installed again, and it runs. */
  service?: { path: string; version: string }
}

export interface Verdict {
  sha256: string
  verdict: 'done' | 'rolled-back'
  reason?: string
  by: string
  at: number
}

export const emptyJournal = (): Journal => ({ v: 1, sequence: 0, current: null, skipped: [] })

function fsyncDir(dir: string): void {
  try {
    const fd = openSync(dir, 'r')
    try {
      fsyncSync(fd)
    } finally {
      closeSync(fd)
    }
  } catch {}
}

/** Writes `file` whole or not at all: temp file, fsync, rename, fsync of the folder. */
export function writeDurable(file: string, text: string): void {
  mkdirSync(dirname(file), { recursive: true, mode: 0o700 })
  const tmp = `${file}.tmp-${process.pid}`
  const fd = openSync(tmp, 'w', 0o600)
  try {
    writeSync(fd, Buffer.from(text))
    fsyncSync(fd)
  } finally {
    closeSync(fd)
  }
  renameSync(tmp, file)
  fsyncDir(dirname(file))
}

export function readJournal(dataDir: DataDir): Journal {
  try {
    const j = JSON.parse(readFileSync(dataDir.path(JOURNAL_FILE), 'utf8')) as Journal
    if (j?.v !== 1 || !Number.isSafeInteger(j.sequence) || !Array.isArray(j.skipped)) return emptyJournal()
    return j
  } catch {
    return emptyJournal()
  }
}

export function writeJournal(dataDir: DataDir, j: Journal): void {
  writeDurable(dataDir.path(JOURNAL_FILE), `${JSON.stringify(j, null, 2)}\n`)
}

/**
 * Records the verdict on a trial unless one is recorded already: the watchdog,
 * a restarted Agent and the trial itself may each recordVerdict, and the first to
 * link its file in place wins (link(2) refuses an existing name). The verdict
 * that stands is returned.
 */
export function recordVerdict(dataDir: DataDir, v: Verdict): Verdict {
  const file = dataDir.path(VERDICT_FILE)
  const tmp = `${file}.tmp-${process.pid}`
  writeDurable(tmp, `${JSON.stringify(v)}\n`)
  try {
    linkSync(tmp, file)
    fsyncDir(dirname(file))
    return v
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e
    return readVerdict(dataDir) ?? v
  } finally {
    rmSync(tmp, { force: true })
  }
}

export function readVerdict(dataDir: DataDir): Verdict | undefined {
  try {
    const v = JSON.parse(readFileSync(dataDir.path(VERDICT_FILE), 'utf8')) as Verdict
    return v && (v.verdict === 'done' || v.verdict === 'rolled-back') && typeof v.sha256 === 'string' ? v : undefined
  } catch {
    return undefined
  }
}

export function clearVerdict(dataDir: DataDir): void {
  rmSync(dataDir.path(VERDICT_FILE), { force: true })
  rmSync(dataDir.path(HEALTH_FILE), { force: true })
}

export const releaseDir = (r: { version: string; sequence: number }) => `${r.version}-${r.sequence}`
export const releaseBinary = (dataDir: DataDir, dir: string) => dataDir.path(VERSIONS_DIR, dir, 'muster')

/** Where versions/current points (a folder name under versions/), or null. */
export function currentDir(dataDir: DataDir): string | null {
  try {
    return readlinkSync(dataDir.path(CURRENT_LINK))
  } catch {
    return null
  }
}

/** Points `link` at `dir` (or removes it for null), atomically: a new link renamed over the old. */
export function pointLink(dataDir: DataDir, link: string, dir: string | null): void {
  const path = dataDir.path(link)
  if (dir === null) {
    try {
      unlinkSync(path)
    } catch {}
    fsyncDir(dirname(path))
    return
  }
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 })
  const tmp = `${path}.tmp-${process.pid}`
  rmSync(tmp, { force: true })
  symlinkSync(dir, tmp)
  renameSync(tmp, path)
  fsyncDir(dirname(path))
}

/** The binary versions/current names, when it is there. */
export function currentBinary(dataDir: DataDir): string | null {
  const dir = currentDir(dataDir)
  if (!dir || dir.includes('/')) return null
  const bin = releaseBinary(dataDir, dir)
  return existsSync(bin) ? bin : null
}

/** Removes release folders other than those named (keep the running one and the one before it). */
export function pruneVersions(dataDir: DataDir, keep: (string | null | undefined)[]): string[] {
  const root = dataDir.path(VERSIONS_DIR)
  const removed: string[] = []
  let names: string[] = []
  try {
    names = readdirSync(root)
  } catch {
    return removed
  }
  for (const name of names) {
    if (name === 'current' || name === 'previous' || name.startsWith('.') || keep.includes(name)) continue
    rmSync(join(root, name), { recursive: true, force: true })
    removed.push(name)
  }
  return removed
}
