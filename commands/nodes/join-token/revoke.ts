import { defineCommand } from 'citty'
import { clientArgs } from '../../_args.ts'
import { esc, note, printJsonLine } from '../../_out.ts'

export default defineCommand({
  meta: { name: 'revoke', description: 'Revoke a join token (nodes that enrolled with it keep working)' },
  args: { id: { type: 'positional', required: true, description: 'Token id (from `join-token list`)' }, ...clientArgs },
  async run({ args }) {
    const { clientFrom } = await import('../../_client.ts')
    const r = await clientFrom(args).nodes.revokeJoinToken(args.id)
    if (args.json) return void printJsonLine(r)
    note(esc`Join token ${r.id} revoked.`)
  },
})
