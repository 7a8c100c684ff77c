import { defineCommand } from 'citty'
import { dataDirArg } from './_args.ts'

export default defineCommand({
  meta: { name: 'agent', description: 'Run this node’s Agent: heartbeats, credential renewal, trust refresh, its HTTPS port' },
  args: { ...dataDirArg },
  async run({ args }) {
    const { Agent } = await import('../src/agent/agent.ts')
    const { resolveDataDir } = await import('../src/datadir.ts')
    const { log } = await import('../src/log.ts')
    const agent = new Agent({ dataDir: resolveDataDir(args['data-dir']) })
    await agent.start()
    await new Promise<void>((resolve) => {
      const stop = (sig: string) => {
        log.info(`${sig}: stopping`)
        resolve()
      }
      process.once('SIGINT', () => stop('SIGINT'))
      process.once('SIGTERM', () => stop('SIGTERM'))
    })
    await agent.stop()
  },
})
