import { defineCommand } from 'citty'
import { clientArgs } from '../_args.ts'

export default defineCommand({
  meta: { name: 'enable', description: 'Enable a disabled account again (its ended sessions stay ended)' },
  args: { name: { type: 'positional', required: true, description: 'Account name' }, ...clientArgs },
  async run({ args }) {
    const { checkAccount, endedLine } = await import('./_shared.ts')
    const { clientFrom } = await import('../_client.ts')
    const a = await clientFrom(args).accounts.enable(checkAccount(args.name))
    if (args.json) return void process.stdout.write(`${JSON.stringify(a)}\n`)
    process.stderr.write(`Account ${a.name} enabled.${endedLine(a.ended)}\n`)
  },
})
