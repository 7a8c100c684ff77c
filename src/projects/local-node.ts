// The Platform's own node, `local`: an in-process Agent that takes part in
// placement and runs its replicas with the same runner and the same signature
// check as a remote Agent.
import { cpus, totalmem } from 'node:os'
import type { Context } from '../context/context.ts'
import type { Fabric } from '../fabric/fabric.ts'
import type { NodeView } from '../wire/nodes.ts'
import { Runner } from '../replicas/runner.ts'
import { log } from '../log.ts'
import { checkAssignments } from '../signed/documents.ts'
import type { SignedAssignments } from '../wire/projects.ts'
import type { LocalNodeHooks } from './service.ts'
import { VERSION } from '../version.ts'
import { DEFAULT_LOG_MAX_BYTES } from '../replicas/log-files.ts'
import type { LocalLogs } from './logs.ts'

export function startLocalNode(ctx: Context, fabric: Fabric): LocalNodeHooks & LocalLogs & { stop(): Promise<void>; release(): void } {
  // Recorded like an Agent's, so a Platform that crashed adopts its replicas instead of starting them twice.
  const runner = new Runner({ logDir: ctx.dataDir.ensureDir('platform', 'local-node', 'logs'), stateFile: ctx.dataDir.path('platform', 'local-node', 'replicas.json') })
  let revision = 0
  return {
    capacity: () => ({ cpuMillis: cpus().length * 1000, memoryMB: Math.floor(totalmem() / 1024 / 1024) }),
    status: () => runner.status(),
    apply(doc: SignedAssignments) {
      const check = checkAssignments(doc, fabric.trust.published(), 'local', revision, ctx.now())
      if (!check.ok) {
        log.warn(`local node: refused assignments: ${check.reason}`)
        return
      }
      revision = check.doc.payload.revision
      runner.apply(check.doc.payload.replicas)
    },
    stop: () => runner.stopAll(),
    /** An engine swap: the replicas run on, and the next engine's local node adopts them. */
    release: () => runner.release(),
    logFile: (project, replica) => runner.logFile(project, replica),
    maxLogBytes: DEFAULT_LOG_MAX_BYTES,
  }
}

/** The Platform's own node as the node list shows it. */
export function localNodeView(now: number, capacity: NodeView['capacity']): NodeView {
  return {
    name: 'local',
    state: 'ready',
    compatibility: 'current',
    version: VERSION,
    certificateSha256: null,
    agentId: 'agent-local',
    lastSeenAt: new Date(now).toISOString(),
    url: null,
    auth: 'local',
    drained: false,
    labels: {},
    declared: false,
    capacity,
  }
}
