import { defineCommand } from 'citty'
import { clientArgs } from '../_args.ts'

export default defineCommand({
  meta: { name: 'audit', description: 'Enrollment attempts, newest first, with the reason for each refusal' },
  args: { ...clientArgs },
  async run({ args }) {
    const { clientFrom } = await import('../_client.ts')
    const { printJson, printTable } = await import('../_out.ts')
    const r = await clientFrom(args).nodes.audit()
    if (args.json) return printJson(r)
    printTable(['at', 'outcome', 'node', 'version', 'reason'], r.entries.map((e) => [e.at, e.outcome, e.nodeId, e.version, e.reason]))
  },
})
