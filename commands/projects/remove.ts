import { defineCommand } from 'citty'
import { clientArgs } from '../_args.ts'
import { esc, note, printJsonLine } from '../_out.ts'

export default defineCommand({
  meta: { name: 'remove', description: 'Remove a project; its processes are stopped on every node' },
  args: { name: { type: 'positional', required: true, description: 'Project name' }, ...clientArgs },
  async run({ args }) {
    const { clientFrom } = await import('../_client.ts')
    const r = await clientFrom(args).projects.remove(args.name)
    if (args.json) return void printJsonLine(r)
    note(esc`Project ${r.name} removed; its replicas are being stopped.`)
  },
})
