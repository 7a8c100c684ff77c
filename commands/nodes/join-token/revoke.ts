import { defineCommand } from 'citty'
import { clientArgs } from '../../_args.ts'

export default defineCommand({
  meta: { name: 'revoke', description: 'Revoke a join token (nodes that enrolled with it keep working)' },
  args: { id: { type: 'positional', required: true, description: 'Token id (from `join-token list`)' }, ...clientArgs },
  async run({ args }) {
    const { clientFrom } = await import('../../_client.ts')
    const r = await clientFrom(args).nodes.revokeJoinToken(args.id)
    if (args.json) return void process.stdout.write(`${JSON.stringify(r)}\n`)
    process.stderr.write(`Join token ${r.id} revoked.\n`)
  },
})
