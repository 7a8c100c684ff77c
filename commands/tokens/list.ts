import { defineCommand } from 'citty'
import { clientArgs } from '../_args.ts'

export default defineCommand({
  meta: { name: 'list', description: 'List live API tokens (never their secrets): yours, or every account’s for server.accounts.manage' },
  args: { ...clientArgs },
  async run({ args }) {
    const { clientFrom } = await import('../_client.ts')
    const { ago, printJson, printTable } = await import('../_out.ts')
    const r = await clientFrom(args).auth.listApiTokens()
    if (args.json) return printJson(r)
    printTable(['id', 'name', 'role', 'account', 'created', 'last used', 'expires'], r.tokens.map((t) => [t.id, t.name, t.role, t.account, t.createdAt, ago(t.lastUsedAt), t.expiresAt ?? 'never']))
  },
})
