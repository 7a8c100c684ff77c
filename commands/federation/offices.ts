import { defineCommand } from 'citty'
import { clientArgs } from '../_args.ts'

export default defineCommand({
  meta: { name: 'offices', description: 'The directory: every office, where it is, whether it heartbeats, what was placed there' },
  args: { ...clientArgs },
  async run({ args }) {
    const { clientFrom } = await import('../_client.ts')
    const { printJson, printTable, ago } = await import('../_out.ts')
    const r = await clientFrom(args).federation.offices()
    if (args.json) return printJson(r)
    printTable(
      ['office', 'status', 'fresh', 'last seen', 'address', 'version', 'projects'],
      r.offices.map((o) => [o.officeId, o.status, o.fresh ? 'yes' : 'no', ago(o.lastSeenAt), o.advertiseUrl, o.version, o.projects.map((p) => `${p.name}:${p.state}`).join(' ')]),
    )
  },
})
