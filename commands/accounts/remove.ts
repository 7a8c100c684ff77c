import { defineCommand } from 'citty'
import { clientArgs } from '../_args.ts'
import { esc, note, printJsonLine } from '../_out.ts'

export default defineCommand({
  meta: { name: 'remove', description: 'Remove an account with its sessions, revoking every token it held' },
  args: { name: { type: 'positional', required: true, description: 'Account name' }, ...clientArgs },
  async run({ args }) {
    const { checkAccount } = await import('./_shared.ts')
    const { clientFrom } = await import('../_client.ts')
    const r = await clientFrom(args).accounts.remove(checkAccount(args.name))
    if (args.json) return void printJsonLine(r)
    note(esc`Account ${r.name} removed; its sessions ended and its tokens were revoked.`)
  },
})
