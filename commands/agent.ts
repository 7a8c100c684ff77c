import { defineCommand } from 'citty'
import { dataDirArg } from './_args.ts'
import { ExitStatus } from './_main.ts'

export default defineCommand({
  meta: {
    name: 'agent',
    description: 'Run this node’s Agent: heartbeats, credential renewal, trust refresh, its HTTPS port. Exits 3 when the Platform refuses its credential for good (revoked, removed, rebound)',
  },
  args: { ...dataDirArg },
  async run({ args }) {
    const { Agent } = await import('../src/agent/agent.ts')
    const { resolveDataDir } = await import('../src/datadir.ts')
    const { untilStopSignal } = await import('../src/shutdown.ts')
    const agent = new Agent({ dataDir: resolveDataDir(args['data-dir']) })
    await agent.start()
    const refused = await Promise.race([untilStopSignal().then(() => undefined), agent.refusedForGood])
    await agent.stop()
    // Status 3: the unit does not restart it (RestartPreventExitStatus=3); only a new join brings it back.
    if (refused) throw new ExitStatus(3, refused)
  },
})
