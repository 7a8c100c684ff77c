import { defineCommand } from 'citty'
import { clientArgs } from '../_args.ts'

export default defineCommand({
  meta: { name: 'list', description: 'List projects with their running replicas and shortfall' },
  args: { ...clientArgs },
  async run({ args }) {
    const { clientFrom } = await import('../_client.ts')
    const { printJson, printTable } = await import('../_out.ts')
    const r = await clientFrom(args).projects.list()
    if (args.json) return printJson(r)
    printTable(
      ['name', 'replicas', 'running', 'cpu', 'memory', 'shortfall', 'command'],
      r.projects.map((p) => [p.name, p.replicas, p.placements.filter((x) => x.state === 'running').length, `${p.cpu}m`, `${p.memory}MB`, p.reason ? `${p.shortfall} (${p.reason})` : 0, p.command.join(' ')]),
    )
  },
})
