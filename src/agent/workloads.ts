// The Agent's workloads: fetch the node's signed assignments when the
// heartbeat answer says their revision moved (issue 16: no request held open
// per node, so a Platform serves 100,000 nodes on heartbeats alone), verify
// them against the trust set, run them with the runner, and report replica
// state in heartbeats. Nothing unsigned, wrongly signed, for another node or
// older than what runs is ever applied.
import { log } from '../log.ts'
import { checkAssignments } from '../projects/assignments.ts'
import { Runner } from './runner.ts'
import { apiClient } from './connect.ts'
import type { Agent } from './agent.ts'

const REVISION_FILE = 'worker/assignments-revision'

export interface Workloads {
  runner: Runner
  /** The revision of the assignments being run. */
  revision(): number
  stop(): Promise<void>
}

export function startWorkloads(agent: Agent): Workloads {
  const runner = new Runner({ logDir: agent.dataDir.ensureDir('worker', 'logs'), onChange: () => agent.nudge() })
  agent.replicaStatus = () => runner.status()
  // The revision survives restarts, so a replayed old document is refused after one too.
  let revision = Number(agent.dataDir.readSecretText(REVISION_FILE)?.trim() ?? '0') || 0
  let applied = false
  let stopped = false
  let failures = 0
  /** The newest revision a heartbeat announced while a fetch ran (fetched again after it). */
  let announced = 0
  let fetching: Promise<void> | undefined
  const node = agent.config.nodeId

  const fetchOnce = async () => {
    const url = agent.platforms.current
    try {
      const doc = await apiClient(agent.connection(), agent.nodeCredential).projects.assignments()
      failures = 0
      if (stopped) return
      let check = checkAssignments(doc, agent.trustKeys, node, revision, agent.now())
      // Signed by a key this node does not hold yet: refresh trust (at most once a minute), then verify again.
      if (!check.ok && check.unknownKey && (await agent.refreshForUnknownKid())) check = checkAssignments(doc, agent.trustKeys, node, revision, agent.now())
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
  agent.afterHeartbeat = (answer) => {
    if (stopped) return
    const r = answer.assignmentRevision
    if (r === undefined) return sync()
    announced = Math.max(announced, r)
    // Revision 0: nothing was ever assigned to this node, so there is nothing to run.
    if (!applied && r === 0 && revision === 0) applied = true
    else if (!applied ? r > 0 : r > revision) sync()
  }
  return {
    runner,
    revision: () => revision,
    async stop() {
      stopped = true
      await fetching
      await runner.stopAll()
    },
  }
}
