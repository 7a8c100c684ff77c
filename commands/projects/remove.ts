import { defineCommand } from 'citty'
import { clientArgs } from '../_args.ts'

export default defineCommand({
  meta: { name: 'remove', description: 'Remove a project; its processes are stopped on every node' },
  args: { name: { type: 'positional', required: true, description: 'Project name' }, ...clientArgs },
  async run({ args }) {
    const { clientFrom } = await import('../_client.ts')
    const r = await clientFrom(args).projects.remove(args.name)
    if (args.json) return void process.stdout.write(`${JSON.stringify(r)}\n`)
    process.stderr.write(`Project ${r.name} removed; its replicas are being stopped.\n`)
  },
})
