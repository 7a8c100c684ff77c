import { defineCommand } from 'citty'
import { clientArgs } from '../_args.ts'
import { officeArg, officeId } from './_office.ts'
import { clean, esc, note, printJson, printLine } from '../_out.ts'

export default defineCommand({
  meta: { name: 'vouch', description: 'Vouch for yourself at an office: a single-use, 120-second sign-in link' },
  args: { ...officeArg, ...clientArgs },
  async run({ args }) {
    const id = officeId(args.office)
    const { clientFrom } = await import('../_client.ts')
    const r = await clientFrom(args).federation.vouch(id)
    if (args.json) return printJson(r)
    note(esc`Vouch for office ${id}, single use, valid until ${r.expiresAt}. Open:`)
    printLine(clean(r.redeemUrl ?? r.vouch))
  },
})
