import { defineCommand } from 'citty'
import { clientArgs } from '../_args.ts'
import { esc, note, printJsonLine } from '../_out.ts'

export default defineCommand({
  meta: { name: 'set-role', description: "Change an account's role; a lesser role ends its sessions and login tokens at once" },
  args: {
    name: { type: 'positional', required: true, description: 'Account name' },
    role: { type: 'positional', required: true, description: 'viewer, operator or superadmin' },
    ...clientArgs,
  },
  async run({ args }) {
    const { checkAccount, checkRole, endedLine } = await import('./_shared.ts')
    const name = checkAccount(args.name)
    const role = checkRole(args.role, 'ROLE')
    const { clientFrom } = await import('../_client.ts')
    const a = await clientFrom(args).accounts.setRole(name, role)
    if (args.json) return void printJsonLine(a)
    note(esc`Account ${a.name} is now ${a.role}.${endedLine(a.ended)}`)
  },
})
