import { defineCommand } from 'citty'
import { clientArgs, intArg, pageArgs } from '../_args.ts'
import { esc, printJson, printLine, printTable } from '../_out.ts'

export default defineCommand({
  meta: { name: 'list', description: 'List projects with their running replicas and shortfall, a page at a time' },
  args: { ...clientArgs, ...pageArgs },
  async run({ args }) {
    const limit = intArg(args, 'limit', 1, 5000)
    const { clientFrom } = await import('../_client.ts')
    const client = clientFrom(args)
    const r = args.all ? { projects: await client.projects.listAll({ limit }), nextCursor: null } : await client.projects.list({ limit })
    if (args.json) return printJson(r)
    printTable(
      ['name', 'replicas', 'running', 'cpu', 'memory', 'shortfall', 'command'],
      r.projects.map((p) => [p.name, p.replicas, p.placements.filter((x) => x.state === 'running').length, `${p.cpu}m`, `${p.memory}MB`, p.reason ? `${p.shortfall} (${p.reason})` : 0, p.command.join(' ')]),
    )
    if (r.nextCursor !== null) printLine(esc`(${r.projects.length} shown; --all lists every page)`)
  },
})
