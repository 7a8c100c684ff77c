import { defineCommand } from 'citty'
import { clientArgs } from '../_args.ts'

export default defineCommand({
  meta: { name: 'list', description: 'The recent rollouts, newest first' },
  args: { ...clientArgs },
  async run({ args }) {
    const { clientFrom } = await import('../_client.ts')
    const r = await clientFrom(args).rollouts.list()
    const { printJson, printTable, printLine } = await import('../_out.ts')
    if (args.json) return printJson(r)
    if (r.rollouts.length === 0) return printLine('no rollouts yet: muster rollouts start VERSION')
    printTable(['id', 'version', 'state', 'done', 'failed', 'started', 'by', 'reason'], r.rollouts.map((x) => [x.id, x.version, x.state, x.counts.done, x.counts.failed + x.counts['rolled-back'], x.createdAt, x.createdBy, x.reason]))
  },
})
