import { defineCommand } from 'citty'
import { clientArgs } from '../_args.ts'

export default defineCommand({
  meta: { name: 'list', description: 'List accounts: role, origin (local, or created by a vouch), state, expiry and live sessions' },
  args: { ...clientArgs },
  async run({ args }) {
    const { clientFrom } = await import('../_client.ts')
    const { printJson, printTable } = await import('../_out.ts')
    const r = await clientFrom(args).accounts.list()
    if (args.json) return printJson(r)
    printTable(
      ['name', 'role', 'origin', 'state', 'expires', 'sessions', 'created'],
      r.accounts.map((a) => [a.name, a.role, a.origin, a.disabled ? 'disabled' : a.hasPassword ? 'active' : 'vouch only', a.expiresAt ?? 'never', a.sessions, a.createdAt]),
    )
  },
})
