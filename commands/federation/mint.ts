import { defineCommand } from 'citty'
import { clientArgs, UsageError } from '../_args.ts'
import { officeArg, officeId } from './_office.ts'
import { clean, esc, note, printJson, printLine } from '../_out.ts'

export default defineCommand({
  meta: { name: 'mint', description: 'Mint the join token for one office (shown once; superadmin)' },
  args: {
    ...officeArg,
    label: { type: 'string', valueHint: 'TEXT', description: 'A human name for the office (at most 64 characters)' },
    note: { type: 'string', valueHint: 'TEXT', description: 'A free note, e.g. where it runs (at most 256 characters)' },
    rotate: { type: 'boolean', description: 'Replace the office\'s current token; the old one stops working at once' },
    ...clientArgs,
  },
  async run({ args }) {
    const id = officeId(args.office)
    if (args.label !== undefined && args.label.length > 64) throw new UsageError('--label is at most 64 characters')
    if (args.note !== undefined && args.note.length > 256) throw new UsageError('--note is at most 256 characters')
    const { clientFrom } = await import('../_client.ts')
    const client = clientFrom(args)
    const r = await client.federation.mint({ officeId: id, label: args.label, note: args.note, rotate: args.rotate || undefined })
    if (args.json) return printJson(r)
    note(esc`Join token for office ${r.officeId}${args.rotate ? ' (the previous one no longer works)' : ''}; shown once. Start the office with:\n` +
      `  MUSTER_CONTROLLER_URL=${client.url} MUSTER_ADVERTISE_URL=https://<office-address> MUSTER_JOIN_TOKEN=<token> muster serve`)
    printLine(clean(r.token))
  },
})
