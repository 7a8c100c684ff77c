import { defineCommand } from 'citty'
import { clientArgs } from '../_args.ts'
import { officeArg, officeId } from './_office.ts'
import { esc, note, printJson } from '../_out.ts'

export default defineCommand({
  meta: { name: 'revoke', description: "Revoke an office's token: its next heartbeat is refused; the record and its projects stay" },
  args: { ...officeArg, ...clientArgs },
  async run({ args }) {
    const id = officeId(args.office)
    const { clientFrom } = await import('../_client.ts')
    const r = await clientFrom(args).federation.revoke(id)
    if (args.json) return printJson(r)
    note(esc`Office ${r.officeId} revoked. Vouches minted in the last 120 s stay redeemable there until they expire; \`muster federation mint ${r.officeId} --rotate\` shuts them out at once.`)
  },
})
