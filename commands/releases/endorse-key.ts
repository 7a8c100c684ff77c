import { defineCommand } from 'citty'
import { clientArgs, UsageError } from '../_args.ts'

export default defineCommand({
  meta: { name: 'endorse-key', description: 'Let nodes trust a new release key: sign its public half with a key they already trust, and give that to the Platform' },
  args: {
    new: { type: 'positional', required: true, description: 'The new key file (from muster releases keygen)' },
    key: { type: 'string', valueHint: 'FILE', description: 'A release key the nodes trust already', required: true },
    ...clientArgs,
  },
  async run({ args }) {
    if (!args.key) throw new UsageError('--key FILE is required')
    const { readKeyFile } = await import('./_key.ts')
    const [next, by] = [await readKeyFile(args.new), await readKeyFile(args.key)]
    if (next.kid === by.kid) throw new UsageError('the new key and --key are the same key')
    const { endorseKey } = await import('../../src/signed/releases.ts')
    const e = endorseKey(by, next)
    const { clientFrom } = await import('../_client.ts')
    const r = await clientFrom(args).releases.addKey({ kid: e.kid, publicKey: e.publicKey, endorsedBy: e.endorsedBy!, signature: e.signature! })
    const { printJson } = await import('../_out.ts')
    if (args.json) return printJson(r)
    process.stderr.write(`Release key ${r.kid} endorsed by ${by.kid}: nodes take it at their next trust refresh (daily, or when they meet it).\n`)
  },
})
