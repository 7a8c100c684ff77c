// The Agent's workloads: pull the node's signed assignments (long poll),
// verify them against the trust set, run them with the runner, and report
// replica state in heartbeats. Nothing unsigned, wrongly signed, for another
// node or older than what runs is ever applied.
import { log } from '../log.ts'
import { checkAssignments } from '../projects/assignments.ts'
import { Runner } from './runner.ts'
import { apiClient } from './connect.ts'
import type { Agent } from './agent.ts'

const REVISION_FILE = 'worker/assignments-revision'
const LONG_POLL_SECONDS = 25

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
  const node = agent.config.nodeId

  const loop = async () => {
    while (!stopped) {
      try {
        const doc = await apiClient(agent.config, agent.nodeCredential).projects.assignments(applied ? revision : undefined, applied ? LONG_POLL_SECONDS : 0)
        failures = 0
        if (stopped) return
        let check = checkAssignments(doc, agent.trustKeys, node, revision, agent.now())
        // Signed by a key this node does not hold yet: refresh trust (at most once a minute), then verify again.
        if (!check.ok && check.unknownKey && (await agent.refreshForUnknownKid())) check = checkAssignments(doc, agent.trustKeys, node, revision, agent.now())
        if (!check.ok) {
          log.warn(`refused assignments: ${check.reason}`)
          await Bun.sleep(5000)
          continue
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
        failures++
        if (failures === 1 || failures % 10 === 0) log.warn(`cannot fetch assignments (${failures}x): ${(e as Error).message}; replicas keep running`)
        await Bun.sleep(Math.min(30_000, 1000 * 2 ** Math.min(failures, 5)))
      }
    }
  }
  void loop()
  return {
    runner,
    revision: () => revision,
    async stop() {
      stopped = true
      await runner.stopAll()
    },
  }
}
