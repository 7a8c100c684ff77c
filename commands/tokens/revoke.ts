import { defineCommand } from 'citty'
import { clientArgs, UsageError } from '../_args.ts'
import { esc, note, printJsonLine } from '../_out.ts'

export default defineCommand({
  meta: { name: 'revoke', description: 'Revoke an API token at once (on every Platform sharing the store)' },
  args: { id: { type: 'positional', required: true, description: 'Token id (from `muster tokens list`; the 16 characters after mat_)' }, ...clientArgs },
  async run({ args }) {
    if (!/^[a-z2-7]{16}$/.test(args.id)) throw new UsageError(`ID must be a token id of 16 characters (see \`muster tokens list\`), got "${args.id}"`)
    const { clientFrom } = await import('../_client.ts')
    const r = await clientFrom(args).auth.revokeApiToken(args.id)
    if (args.json) return void printJsonLine(r)
    note(esc`API token ${r.id} revoked.`)
  },
})
