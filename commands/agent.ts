import { defineCommand } from 'citty'
import { consola } from 'consola'
import { dataDirArg, logFormatArg } from './_args.ts'
import { ExitStatus } from './_main.ts'
import { esc, printLine } from './_out.ts'

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
    'update-watch': { type: 'string', valueHint: 'SHA256', description: 'Internal: judge the new Agent of an update (started by the Agent itself; docs/upgrading.md)' },
    'metrics-address': { type: 'string', valueHint: 'HOST:PORT', description: 'Serve the Agent’s metrics for a local Prometheus scrape at http://HOST:PORT/metrics (off by default; loopback only unless --metrics-allow-remote)' },
    'metrics-allow-remote': { type: 'boolean', description: 'Let --metrics-address bind an address other machines reach' },
    ...logFormatArg,
  },
  async run({ args }) {
    if (args['log-format'] === 'json') (await import('../src/log.ts')).setLogFormat('json', consola)
    const { resolveDataDir } = await import('../src/datadir.ts')
    const dataDir = resolveDataDir(args['data-dir'])
    if (args['stop-replicas']) {
      const { stopReplicas } = await import('../src/agent/stop-replicas.ts')
      const r = await stopReplicas(dataDir)
      if (r.agentPid !== undefined) printLine(esc`the Agent (pid ${r.agentPid}) stopped its replicas and exited`)
      else printLine(r.stopped.length === 0 ? 'no replica was running' : `stopped ${r.stopped.length} replica(s): ${r.stopped.map((p) => `${p.project}/${p.replica} (pid ${p.pid})`).join(', ')}`)
      return
    }
    if (args['update-watch']) {
      const { runWatchdog } = await import('../src/agent/update/watchdog.ts')
      const { DataDir } = await import('../src/datadir.ts')
      return runWatchdog(new DataDir(dataDir), args['update-watch'])
    }
    const { Agent } = await import('../src/agent/agent.ts')
    const { untilStopSignal } = await import('../src/shutdown.ts')
    const { log } = await import('../src/log.ts')
    const { DataDir } = await import('../src/datadir.ts')
    const metricsServer = await import('../src/agent/metrics-server.ts')
    const metricsAt = args['metrics-address'] === undefined ? undefined : metricsServer.parseMetricsAddress(args['metrics-address'], Boolean(args['metrics-allow-remote']))
    // What runs: a rolled-out release replaces this process (execve) before anything starts; a trial is told so.
    const { prepareLaunch } = await import('../src/agent/update/launch.ts')
    const launch = await prepareLaunch(new DataDir(dataDir))
    const agent = new Agent({ dataDir, runAs: args['run-as'] })
    await agent.start()
    const metrics = metricsAt && metricsServer.startAgentMetrics(metricsServer.agentSources(agent), metricsAt)
    const { Updater } = await import('../src/agent/update/updater.ts')
    const { tunableNumber } = await import('../src/tunables.ts')
    const updater = new Updater(agent, { trial: launch.trial, stepDelayMs: tunableNumber('MUSTER_UPDATE_STEP_DELAY_MS') })
    updater.start()
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
      updater.fatal.then((line) => {
        throw new ExitStatus(1, line)
      }),
    ])
    updater.stop()
    metrics?.stop()
    await agent.stop({ stopReplicas: stopReplicas || refused !== undefined })
    // Status 3: the unit does not restart it (RestartPreventExitStatus=3); only a new join brings it back.
    if (refused) throw new ExitStatus(3, refused)
  },
})
