import { defineCommand } from 'citty'
import { clientArgs } from '../_args.ts'
import { esc, note, printJsonLine } from '../_out.ts'

export default defineCommand({
  meta: { name: 'add', description: 'Add an account for a person; its password comes from a no-echo prompt, stdin or --password-file' },
  args: {
    name: { type: 'positional', required: true, description: 'Account name: lowercase letters, digits and . _ @ - (at most 64)' },
    role: { type: 'string', required: true, valueHint: 'ROLE', description: 'viewer (reads), operator (runs the fleet), or superadmin (also accounts, tokens of any role, federation, the audit)' },
    'password-file': { type: 'string', valueHint: 'FILE', description: 'Read the password from this file (mode 0600)' },
    expires: { type: 'string', valueHint: 'TIME', description: 'The account stops working then: 2027-01-31, an ISO time, or 90d / 12h from now (default: never)' },
    ...clientArgs,
  },
  async run({ args }) {
    const { checkAccount, checkRole, expiresArg } = await import('./_shared.ts')
    const name = checkAccount(args.name)
    const role = checkRole(args.role, '--role')
    const expiresAt = expiresArg(args.expires)
    const { readSecret, hasTty, promptSecret } = await import('../_secret.ts')
    const { MusterError } = await import('../../src/errors.ts')
    const password = await readSecret({ what: `password for ${name}`, file: { value: args['password-file'], flag: '--password-file' } })
    if (!args['password-file'] && hasTty() && (await promptSecret('Repeat the password')) !== password) throw new MusterError('invalid-request', 'The passwords differ; nothing was added.')
    const { clientFrom } = await import('../_client.ts')
    const a = await clientFrom(args).accounts.add({ name, role, password, ...(expiresAt ? { expiresAt } : {}) })
    if (args.json) return void printJsonLine(a)
    note(esc`Account ${a.name} added as ${a.role}${a.expiresAt ? `, until ${a.expiresAt}` : ''}. It logs in with \`muster login\` or the dashboard.`)
  },
})
