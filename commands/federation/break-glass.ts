import { defineCommand } from 'citty'
import { clientArgs } from '../_args.ts'

export default defineCommand({
  meta: { name: 'break-glass', description: 'Break-glass acts offices have reported: who re-opened a local door, and when' },
  args: { ...clientArgs },
  async run({ args }) {
    const { clientFrom } = await import('../_client.ts')
    const { printJson, printTable } = await import('../_out.ts')
    const r = await clientFrom(args).federation.breakGlassReports()
    if (args.json) return printJson(r)
    printTable(['office', 'account', 'at', 'reported'], r.reports.map((b) => [b.officeId, b.account, b.at, b.reportedAt]))
  },
})
