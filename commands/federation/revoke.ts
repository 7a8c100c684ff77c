import { defineCommand } from 'citty'
import { clientArgs } from '../_args.ts'
import { officeArg, officeId } from './_office.ts'

export default defineCommand({
  meta: { name: 'revoke', description: "Revoke an office's token: its next heartbeat is refused; the record and its projects stay" },
  args: { ...officeArg, ...clientArgs },
  async run({ args }) {
    const id = officeId(args.office)
    const { clientFrom } = await import('../_client.ts')
    const { printJson } = await import('../_out.ts')
    const r = await clientFrom(args).federation.revoke(id)
    if (args.json) return printJson(r)
    process.stderr.write(`Office ${r.officeId} revoked. Vouches minted in the last 120 s stay redeemable there until they expire; \`muster federation mint ${r.officeId} --rotate\` shuts them out at once.\n`)
  },
})
