import { defineCommand } from 'citty'
import { dataDirArg, jsonArg, UsageError } from '../_args.ts'

export default defineCommand({
  meta: { name: 'api-token', description: 'Mint an operator API token straight from the data directory (works while serve runs)' },
  args: {
    ...dataDirArg,
    name: { type: 'string', default: 'admin', valueHint: 'NAME', description: 'A label for the token' },
    role: { type: 'string', default: 'superadmin', valueHint: 'ROLE', description: 'Role: superadmin, operator or viewer' },
    account: { type: 'string', valueHint: 'ACCOUNT', description: 'Account the token acts for (default: superadmin for a superadmin token, none otherwise); needed to vouch on offices' },
    ...jsonArg,
  },
  async run({ args }) {
    const { isRole } = await import('../../src/auth/permissions.ts')
    if (!isRole(args.role)) throw new UsageError(`--role must be superadmin, operator or viewer, got "${args.role}"`)
    if (!/^[\w .@-]{1,64}$/.test(args.name)) throw new UsageError('--name must be 1–64 letters, digits, spaces or ._@-')
    const { openHostStore } = await import('../../src/host-store.ts')
    const { resolveDataDir } = await import('../../src/datadir.ts')
    const host = await openHostStore(resolveDataDir(args['data-dir']))
    try {
      const account = args.account ?? (args.role === 'superadmin' ? 'superadmin' : null)
      if (account !== null) await host.auth.assertAccountMayHold(account, args.role)
      const { token } = await host.auth.mintApiToken({ name: args.name, role: args.role, account })
      if (args.json) return void process.stdout.write(`${JSON.stringify({ token, name: args.name, role: args.role })}\n`)
      process.stderr.write(`API token "${args.name}" (${args.role}); shown once:\n`)
      process.stdout.write(`${token}\n`)
    } finally {
      await host.close()
    }
  },
})
