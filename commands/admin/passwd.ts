import { defineCommand } from 'citty'
import { dataDirArg } from '../_args.ts'
import { esc, note } from '../_out.ts'

export default defineCommand({
  meta: { name: 'passwd', description: "Set an account's password from the host (stdin, --password-file or a no-echo prompt)" },
  args: {
    account: { type: 'positional', required: true, description: 'Account name' },
    ...dataDirArg,
    'password-file': { type: 'string', valueHint: 'FILE', description: 'Read the new password from this file' },
  },
  async run({ args }) {
    const { readSecret, hasTty, promptSecret } = await import('../_secret.ts')
    const { MusterError } = await import('../../src/errors.ts')
    const password = await readSecret({ what: 'new password', file: { value: args['password-file'], flag: '--password-file' } })
    if (!args['password-file'] && hasTty() && (await promptSecret('Repeat the new password')) !== password) throw new MusterError('invalid-request', 'The passwords differ; nothing changed.')
    if (password.length < 12) throw new MusterError('invalid-request', 'A password needs at least 12 characters; nothing changed.')
    const { openHostStore } = await import('../../src/context/host-store.ts')
    const { resolveDataDir } = await import('../../src/datadir.ts')
    const host = await openHostStore(resolveDataDir(args['data-dir']))
    try {
      const { auditedHostAct } = await import('../../src/context/host-store.ts')
      const { HOST } = await import('../../src/audit/audit.ts')
      const ended = await auditedHostAct(host, HOST(), 'account.password', args.account, () => host.auth.setPassword(args.account, password))
      note(esc`Password for ${args.account} changed; ended ${ended.sessions} session(s) and revoked ${ended.tokens} token(s) made by its logins.`)
    } finally {
      await host.close()
    }
  },
})
