import { defineCommand } from 'citty'
import { clientArgs } from '../_args.ts'

export default defineCommand({
  meta: { name: 'audit', description: 'Every cloud action (connect, disconnect, provision, release, scaling, autoscale order) and who acted, newest first' },
  args: { ...clientArgs },
  async run({ args }) {
    const { clientFrom } = await import('../_client.ts')
    const { printJson, printTable } = await import('../_out.ts')
    const r = await clientFrom(args).cloud.audit()
    if (args.json) return printJson(r)
    printTable(['at', 'action', 'by', 'provider', 'target', 'outcome', 'detail'], r.entries.map((e) => [e.at, e.action, `${e.principal} (${e.via})`, e.provider, e.target, e.outcome, e.detail]))
  },
})
