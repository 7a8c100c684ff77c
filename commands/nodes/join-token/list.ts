import { defineCommand } from 'citty'
import { clientArgs } from '../../_args.ts'

export default defineCommand({
  meta: { name: 'list', description: 'List fleet join tokens (never their secrets)' },
  args: { ...clientArgs },
  async run({ args }) {
    const { clientFrom } = await import('../../_client.ts')
    const { printJson, printTable } = await import('../../_out.ts')
    const r = await clientFrom(args).nodes.listJoinTokens()
    if (args.json) return printJson(r)
    printTable(['id', 'status', 'uses', 'pattern', 'expires', 'label'], r.tokens.map((t) => [t.id, t.status, `${t.uses}/${t.maxUses}`, t.namePattern, t.expiresAt, t.label]))
  },
})
