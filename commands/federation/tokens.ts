import { defineCommand } from 'citty'
import { clientArgs } from '../_args.ts'

export default defineCommand({
  meta: { name: 'tokens', description: 'List the office tokens minted here: office, status and times (never a secret)' },
  args: { ...clientArgs },
  async run({ args }) {
    const { clientFrom } = await import('../_client.ts')
    const { printJson, printTable, ago } = await import('../_out.ts')
    const r = await clientFrom(args).federation.tokens()
    if (args.json) return printJson(r)
    printTable(['office', 'label', 'status', 'created', 'last seen'], r.tokens.map((t) => [t.officeId, t.label, t.status, t.createdAt, ago(t.lastSeenAt)]))
  },
})
