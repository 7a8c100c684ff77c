import { defineCommand } from 'citty'
import { dataDirArg, jsonArg, UsageError } from '../_args.ts'

export default defineCommand({
  meta: { name: 'break-glass', description: 'On an office host, with the Platform stopped: re-enable local login (and give ACCOUNT a new password)' },
  args: {
    account: { type: 'positional', required: false, description: "One of this office's own accounts to give a new random password (printed once)" },
    ...dataDirArg,
    ...jsonArg,
  },
  async run({ args }) {
    if (args.account !== undefined && !/^[A-Za-z0-9][A-Za-z0-9._@-]{0,127}$/.test(args.account)) throw new UsageError(`ACCOUNT is not an account name: "${args.account}"`)
    const { breakGlass } = await import('../../src/federation/host.ts')
    const { resolveDataDir } = await import('../../src/datadir.ts')
    const r = await breakGlass(resolveDataDir(args['data-dir']), args.account)
    if (args.json) return void process.stdout.write(`${JSON.stringify({ localLoginAllowed: r.localLoginAllowed, account: r.account, password: r.password })}\n`)
    process.stderr.write(
      r.joined
        ? `Local login re-enabled on office ${r.officeId}; recorded, and reported to the controller on the next registration. This office stays joined (\`muster admin detach\` leaves).\n`
        : `This Platform is not joined to a controller. Under serve --oidc-only, password login is open for ${r.account ?? 'every local account'} for 12 hours (recorded in the audit).\n`,
    )
    if (r.password) {
      process.stderr.write(`New password for ${r.account}; shown once:\n`)
      process.stdout.write(`${r.password}\n`)
    }
  },
})
