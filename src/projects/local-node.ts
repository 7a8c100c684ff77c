// The Platform's own node, `local`: an in-process Agent that takes part in
// placement and runs its replicas with the same runner, the same signature
// check and the same containment as a remote Agent (docs/security.md, "The
// local node"): each project a uid of its own from a range the local node
// owns (never root unless `serve --local-run-as root`), each replica a cgroup
// of its own with its --cpu and --memory. Such a uid cannot enter the data
// directory (0700), so a replica reads neither platform/master.key nor the
// store, nor signals the Platform. Its files are under platform/local-node/;
// its cgroup subtree and uid slice are never an Agent's on the same data
// directory.
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
import { containReplicas } from '../replicas/containment.ts'
import type { ReplicaPlace } from '../replicas/isolation.ts'
import type { LocalLogs } from './logs.ts'

export const LOCAL_NODE_DIR = ['platform', 'local-node'] as const

/** Where the local node keeps what an Agent keeps under worker/ (docs/security.md). */
export const localNodePlace = (root: string): ReplicaPlace => ({
  cgroupId: `${root}\0local-node`,
  uidsFile: `${LOCAL_NODE_DIR.join('/')}/uids.json`,
  isolationFile: `${LOCAL_NODE_DIR.join('/')}/isolation.json`,
  uidSalt: 'local-node',
  runner: 'Platform',
  label: 'local node: ',
  flag: '--local-run-as',
  secrets: "the Platform's master key and store",
  grant: 'run serve as root, or give it those capabilities',
})

export async function startLocalNode(ctx: Context, fabric: Fabric, opts: { runAs?: string } = {}): Promise<LocalNodeHooks & LocalLogs & { stop(): Promise<void>; release(): void }> {
  const contained = await containReplicas(ctx.dataDir, opts.runAs, localNodePlace(ctx.dataDir.root))
  // Recorded like an Agent's, so a Platform that crashed adopts its replicas instead of starting them twice.
  const runner = new Runner({
    logDir: ctx.dataDir.ensureDir(...LOCAL_NODE_DIR, 'logs'),
    stateFile: ctx.dataDir.path(...LOCAL_NODE_DIR, 'replicas.json'),
    runAs: contained.runAs,
    cgroups: contained.cgroups,
  })
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
