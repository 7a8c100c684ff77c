// The `update` check of `muster doctor` on a worker (docs/upgrading.md,
// "Recovering a node by hand"): what the Agent's update journal
// (worker/update.json) says. A step with no Agent running it, or one older
// than its deadline, is stuck (the Agent's next start undoes or finishes it);
// an outcome the Platform has not heard yet that failed or rolled back, and a
// release newer than the one installed that this node rolled back, are
// warnings: the node stays behind until someone acts.
import { runningAgentPid } from '../agent/agent-pid.ts'
import { JOURNAL_FILE, readJournal } from '../agent/update/journal.ts'
import type { DataDir } from '../datadir.ts'

type Add = (name: string, status: 'ok' | 'warn' | 'fail', message: string) => void

/** A step before the trial (download, stage, swap) taking longer than this is stuck. */
export const STEP_STUCK_MS = 30 * 60_000
/** The trial's verdict is due at its deadline; past it by this much, nothing is judging it. */
export const TRIAL_GRACE_MS = 60_000

const at = (ms: number) => new Date(ms).toISOString()

export function checkUpdate(dataDir: DataDir, add: Add, now = Date.now()): void {
  if (!dataDir.exists(JOURNAL_FILE)) return add('update', 'ok', 'no update has reached this node')
  const j = readJournal(dataDir)
  const restart = `restart the Agent (sudo systemctl restart muster-agent, or muster agent --data-dir ${dataDir.root}): its start undoes or finishes the update`
  if (j.step && j.update) {
    const u = j.update
    const what = `the update to ${u.to.version} (rollout ${u.rollout}), at step ${j.step} since ${at(u.startedAt)},`
    if (runningAgentPid(dataDir) === undefined) return add('update', 'warn', `${what} has no Agent running it: ${restart}`)
    const due = j.step === 'trial' ? (u.deadline ?? u.startedAt + u.healthTimeoutMs) + TRIAL_GRACE_MS : u.startedAt + STEP_STUCK_MS
    if (now > due) return add('update', 'warn', `${what} is stuck (due by ${at(due)}): ${restart}`)
    return add('update', 'ok', `updating: ${what.replace(/,$/, '')}`)
  }
  const o = j.outcome
  if (o && (o.state === 'failed' || o.state === 'rolled-back')) {
    return add('update', 'warn', `the update to ${o.version} (rollout ${o.rollout}) ${o.state === 'failed' ? 'failed' : 'was rolled back'}${o.error ? `: ${o.error}` : ''} (the Platform hears it at the Agent's next heartbeat)`)
  }
  const behind = j.skipped.filter((s) => s.sequence > j.sequence)
  if (behind.length > 0) {
    const s = behind.at(-1)!
    return add('update', 'warn', `this node rolled back ${s.version} (release sequence ${s.sequence}) at ${s.at}: ${s.reason}; it installs it again only when it is released again under a new sequence (docs/upgrading.md)`)
  }
  add('update', 'ok', j.current ? `runs release ${j.current.version} (sequence ${j.current.sequence}); no update under way` : 'runs the installed binary; no update under way')
}
