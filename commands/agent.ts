import { defineCommand } from 'citty'
import { dataDirArg } from './_args.ts'

export default defineCommand({
  meta: { name: 'agent', description: 'Run this node’s Agent: heartbeats, credential renewal, trust refresh, its HTTPS port' },
  args: { ...dataDirArg },
  async run({ args }) {
    const { Agent } = await import('../src/agent/agent.ts')
    const { resolveDataDir } = await import('../src/datadir.ts')
    const { untilStopSignal } = await import('../src/shutdown.ts')
    const agent = new Agent({ dataDir: resolveDataDir(args['data-dir']) })
    await agent.start()
    await untilStopSignal()
    await agent.stop()
  },
})
