// The Agent's workloads: fetch the node's signed assignments when the
// heartbeat answer says their revision moved (no request held open
// per node, so a Platform serves 100,000 nodes on heartbeats alone), verify
// them against the trust set, run them with the runner, and report replica
// state in heartbeats. Nothing unsigned, wrongly signed, for another node or
// older than what runs is ever applied.
//
// Replicas outlive the Agent: the runner records them in
// worker/replicas.json and the next Agent adopts them; stopping the Agent
// leaves them running unless it is told to stop them (SIGUSR2, or
// `muster agent --stop-replicas`). They run as another account where the
// Agent can switch users (src/replicas/isolation.ts). The log relay serves
// their output to the Platform (src/agent/log-relay.ts).
import { log } from '../log.ts'
import { checkAssignments } from '../signed/documents.ts'
import { Runner } from '../replicas/runner.ts'
import type { AgentHooks, AgentLink } from './link.ts'
import { AGENT_PLACE } from '../replicas/isolation.ts'
import { containReplicas } from '../replicas/containment.ts'
import { startNodeLogRelay } from './log-relay.ts'
import { LOG_POLL_PATH } from '../wire/projects.ts'
import { clearAgentPid, runningAgentPid, writeAgentPid } from './agent-pid.ts'
import { MusterError } from '../errors.ts'
import type { HeartbeatAnswer } from '../wire/nodes.ts'
import { tunableNumber } from '../tunables.ts'

const REVISION_FILE = 'worker/assignments-revision'
export const REPLICAS_FILE = 'worker/replicas.json'
export const LOG_DIR = ['worker', 'logs'] as const

export interface Workloads extends AgentHooks {
  runner: Runner
  /** The revision of the assignments being run. */
  revision(): number
  /** Stops fetching; `stopReplicas` stops the replicas too, else they keep running for the next Agent. */
  stop(stopReplicas?: boolean): Promise<void>
}

export async function startWorkloads(agent: AgentLink, opts: { runAs?: string } = {}): Promise<Workloads> {
  const other = runningAgentPid(agent.dataDir)
  if (other !== undefined && other !== process.pid) throw new MusterError('already-running', `An Agent (pid ${other}) already runs for ${agent.dataDir.root}; stop it first.`)
  // Before anything is adopted: `agent --stop-replicas` asks this process from now on.
  writeAgentPid(agent.dataDir)
  // Each replica's cgroup (where the Agent has a subtree of its own), then who replicas run as; both recorded for doctor.
  const contained = await containReplicas(agent.dataDir, opts.runAs, AGENT_PLACE(agent.dataDir.root))
  const maxLogBytes = tunableNumber('MUSTER_AGENT_LOG_MAX_BYTES')
  const runner = new Runner({
    logDir: agent.dataDir.ensureDir(...LOG_DIR),
    stateFile: agent.dataDir.path(REPLICAS_FILE),
    maxLogBytes,
    stopGraceMs: tunableNumber('MUSTER_AGENT_STOP_GRACE_MS'),
    runAs: contained.runAs,
    cgroups: contained.cgroups,
    onChange: () => agent.nudge(),
  })
  const relay = startNodeLogRelay(agent, { logFile: (p, r) => runner.logFile(p, r), maxLogBytes })
  // The revision survives restarts, so a replayed old document is refused after one too.
  let revision = Number(agent.dataDir.readSecretText(REVISION_FILE)?.trim() ?? '0') || 0
  let applied = false
  let stopped = false
  let failures = 0
  /** The newest revision a heartbeat announced while a fetch ran (fetched again after it). */
  let announced = 0
  let fetching: Promise<void> | undefined
  const node = agent.node

  const fetchOnce = async () => {
    const url = agent.platformUrl()
    try {
      const doc = await agent.api().projects.assignments()
      failures = 0
      if (stopped) return
      let check = checkAssignments(doc, agent.trustKeys(), node, revision, agent.now())
      // Signed by a key this node does not hold yet: refresh trust (at most once a minute), then verify again.
      if (!check.ok && check.unknownKey && (await agent.refreshForUnknownKid())) check = checkAssignments(doc, agent.trustKeys(), node, revision, agent.now())
      if (!check.ok) {
        log.warn(`refused assignments: ${check.reason}`)
        return
      }
      const next = check.doc.payload
      if (!applied || next.revision > revision) {
        runner.apply(next.replicas)
        if (next.revision !== revision) agent.dataDir.writeSecret(REVISION_FILE, `${next.revision}\n`)
        if (applied || next.replicas.length > 0) log.info(`assignments revision ${next.revision}: ${next.replicas.length} replica(s)`)
        revision = next.revision
        applied = true
      }
    } catch (e) {
      if (stopped) return
      // The Platform failed: the next heartbeat goes to another one and announces the revision again.
      if (agent.platformFailed(url, e)) return
      failures++
      if (failures === 1 || failures % 10 === 0) log.warn(`cannot fetch assignments (${failures}x): ${(e as Error).message}; replicas keep running`)
    }
  }

  const sync = () => {
    fetching ??= (async () => {
      try {
        // Again when a heartbeat announced a newer revision meanwhile (a few times at most).
        for (let i = 0; i < 3; i++) {
          await fetchOnce()
          if (stopped || !applied || announced <= revision || failures > 0) break
        }
      } finally {
        fetching = undefined
      }
    })()
  }

  // Each heartbeat answer carries the revision; fetch only when it moved (or,
  // from a Platform that does not send it, on every heartbeat).
  const afterHeartbeat = (answer: HeartbeatAnswer) => {
    if (stopped) return
    if (answer.logs) relay.poll()
    const r = answer.assignmentRevision
    if (r === undefined) return sync()
    announced = Math.max(announced, r)
    // Revision 0: nothing was ever assigned to this node, so there is nothing to run.
    if (!applied && r === 0 && revision === 0) {
      applied = true
      // Nothing assigned here any more: what an earlier Agent left running stops.
      runner.apply([])
    } else if (!applied ? r > 0 : r > revision) sync()
  }
  return {
    runner,
    revision: () => revision,
    replicaStatus: () => runner.status(),
    afterHeartbeat,
    // A Platform that can dial this node says at once that a log request waits (signed; src/projects/log-nudge.ts).
    handleSigned: (r) => (r.method === 'POST' && r.path === LOG_POLL_PATH ? (relay.poll(), new Response(null, { status: 204 })) : undefined),
    async stop(stopReplicas = false) {
      stopped = true
      relay.stop()
      await fetching
      if (stopReplicas) await runner.stopAll()
      else runner.release()
      clearAgentPid(agent.dataDir)
    },
  }
}
