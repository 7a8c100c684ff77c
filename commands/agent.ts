import { defineCommand } from 'citty'
import { dataDirArg } from './_args.ts'
import { ExitStatus } from './_main.ts'

export default defineCommand({
  meta: {
    name: 'agent',
    description:
      'Run this node’s Agent: heartbeats, credential renewal, trust refresh, its HTTPS port, its replicas. Replicas keep running when the Agent stops; SIGUSR2 (or --stop-replicas) stops them. Exits 3 when the Platform refuses its credential for good (revoked, removed, rebound)',
  },
  args: {
    ...dataDirArg,
    'run-as': { type: 'string', valueHint: 'USER', description: 'Run every replica as this account (default: a uid of its own for each project, when the Agent may switch users; root only as --run-as root)' },
    'stop-replicas': { type: 'boolean', description: 'Stop this node’s replicas (a running Agent is asked to, and exits) and exit' },
  },
  async run({ args }) {
    const { resolveDataDir } = await import('../src/datadir.ts')
    const dataDir = resolveDataDir(args['data-dir'])
    if (args['stop-replicas']) {
      const { stopReplicas } = await import('../src/agent/stop-replicas.ts')
      const { printLine } = await import('./_out.ts')
      const r = await stopReplicas(dataDir)
      if (r.agentPid !== undefined) printLine(`the Agent (pid ${r.agentPid}) stopped its replicas and exited`)
      else printLine(r.stopped.length === 0 ? 'no replica was running' : `stopped ${r.stopped.length} replica(s): ${r.stopped.map((p) => `${p.project}/${p.replica} (pid ${p.pid})`).join(', ')}`)
      return
    }
    const { Agent } = await import('../src/agent/agent.ts')
    const { untilStopSignal } = await import('../src/shutdown.ts')
    const { log } = await import('../src/log.ts')
    const agent = new Agent({ dataDir, runAs: args['run-as'] })
    await agent.start()
    // SIGTERM/SIGINT: the Agent stops, its replicas run on (the next Agent adopts them). SIGUSR2: they stop too.
    // A credential refused for good: they stop too (the Platform places them elsewhere), and the exit status is 3.
    let stopReplicas = false
    const refused = await Promise.race([
      untilStopSignal().then(() => undefined),
      new Promise<undefined>((resolve) =>
        process.on('SIGUSR2', () => {
          log.info('SIGUSR2: stopping the replicas and the Agent')
          stopReplicas = true
          resolve(undefined)
        }),
      ),
      agent.refusedForGood,
    ])
    await agent.stop({ stopReplicas: stopReplicas || refused !== undefined })
    // Status 3: the unit does not restart it (RestartPreventExitStatus=3); only a new join brings it back.
    if (refused) throw new ExitStatus(3, refused)
  },
})
