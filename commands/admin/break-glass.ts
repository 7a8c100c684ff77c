import { defineCommand } from 'citty'
import { dataDirArg, jsonArg, UsageError } from '../_args.ts'
import { clean, esc, note, printJsonLine, printLine } from '../_out.ts'

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
    if (args.json) return void printJsonLine({ localLoginAllowed: r.localLoginAllowed, account: r.account, password: r.password })
    note(
      r.joined
        ? esc`Local login re-enabled on office ${r.officeId}; recorded, and reported to the controller on the next registration. This office stays joined (\`muster admin detach\` leaves).`
        : esc`This Platform is not joined to a controller. Under serve --oidc-only, password login is open for ${r.account ?? 'every local account'} for 12 hours (recorded in the audit).`,
    )
    if (r.password) {
      note(esc`New password for ${r.account}; shown once:`)
      printLine(clean(r.password))
    }
  },
})
