import { defineCommand } from 'citty'
import { dataDirArg } from './_args.ts'

export default defineCommand({
  meta: {
    name: 'agent',
    description: 'Run this node’s Agent: heartbeats, credential renewal, trust refresh, its HTTPS port, its replicas. Replicas keep running when the Agent stops; SIGUSR2 (or --stop-replicas) stops them',
  },
  args: {
    ...dataDirArg,
    'run-as': { type: 'string', valueHint: 'USER', description: 'Run replicas as this account (default: muster-run when it exists and the Agent may switch users)' },
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
    let stopReplicas = false
    await Promise.race([
      untilStopSignal(),
      new Promise<void>((resolve) =>
        process.on('SIGUSR2', () => {
          log.info('SIGUSR2: stopping the replicas and the Agent')
          stopReplicas = true
          resolve()
        }),
      ),
    ])
    await agent.stop({ stopReplicas })
  },
})
