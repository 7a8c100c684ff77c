import { defineCommand } from 'citty'
import { clientArgs } from '../_args.ts'
import { esc, note, printJsonLine } from '../_out.ts'

export default defineCommand({
  meta: { name: 'enable', description: 'Enable a disabled account again (its ended sessions stay ended)' },
  args: { name: { type: 'positional', required: true, description: 'Account name' }, ...clientArgs },
  async run({ args }) {
    const { checkAccount, endedLine } = await import('./_shared.ts')
    const { clientFrom } = await import('../_client.ts')
    const a = await clientFrom(args).accounts.enable(checkAccount(args.name))
    if (args.json) return void printJsonLine(a)
    note(esc`Account ${a.name} enabled.${endedLine(a.ended)}`)
  },
})
