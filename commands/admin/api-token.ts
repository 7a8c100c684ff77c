import { defineCommand } from 'citty'
import { dataDirArg, intArg, jsonArg, UsageError } from '../_args.ts'
import { clean, esc, note, printJsonLine, printLine } from '../_out.ts'

export default defineCommand({
  meta: { name: 'api-token', description: 'Mint an operator API token straight from the data directory (works while serve runs)' },
  args: {
    ...dataDirArg,
    name: { type: 'string', default: 'admin', valueHint: 'NAME', description: 'A label for the token' },
    role: { type: 'string', default: 'superadmin', valueHint: 'ROLE', description: 'Role: superadmin, operator, viewer, or metrics (reads GET /metrics only)' },
    account: { type: 'string', valueHint: 'ACCOUNT', description: 'Account the token acts for (default: superadmin for a superadmin token, none otherwise); needed to vouch on offices' },
    'ttl-days': { type: 'string', valueHint: 'N', description: 'Expire the token after N days (default: never; revoke with `muster tokens revoke`)' },
    'break-glass': { type: 'boolean', description: 'On a joined office (local door closed): mint anyway, recorded as a break-glass and reported to the controller' },
    ...jsonArg,
  },
  async run({ args }) {
    const { isRole } = await import('../../src/wire/permissions.ts')
    if (!isRole(args.role)) throw new UsageError(`--role must be superadmin, operator, viewer or metrics, got "${args.role}"`)
    const role = args.role
    if (!/^[\w .@-]{1,64}$/.test(args.name)) throw new UsageError('--name must be 1–64 letters, digits, spaces or ._@-')
    const ttlDays = intArg(args, 'ttl-days', 1, 3650)
    const { openHostStore } = await import('../../src/context/host-store.ts')
    const { resolveDataDir } = await import('../../src/datadir.ts')
    const { apiTokenDoor } = await import('../../src/federation/host.ts')
    const host = await openHostStore(resolveDataDir(args['data-dir']))
    try {
      const account = args.account ?? (args.role === 'superadmin' ? 'superadmin' : null)
      if (account !== null) await host.auth.assertAccountMayHold(account, args.role)
      const { auditedHostAct } = await import('../../src/context/host-store.ts')
      const { HOST } = await import('../../src/audit/audit.ts')
      const expiresAt = ttlDays === undefined ? null : Date.now() + ttlDays * 86_400_000
      const { door, token, id } = await auditedHostAct(host, HOST(), 'token.mint', args.name, async () => {
        const door = await apiTokenDoor(host, account, Boolean(args['break-glass']))
        return { door, ...(await host.auth.mintApiToken({ name: args.name, role, account, expiresAt, origin: 'host' })) }
      }, (r) => `${r.id} role=${args.role}${account ? ` account=${account}` : ''}${r.door.recorded ? ' break-glass' : ''}`)
      const expires = expiresAt === null ? null : new Date(expiresAt).toISOString()
      if (args.json) return void printJsonLine({ id, token, name: args.name, role: args.role, expiresAt: expires, breakGlassRecorded: door.recorded })
      if (door.recorded) note(esc`Break-glass recorded on office ${door.officeId}${account ? ` for ${account}` : ''}; reported to the controller with the next heartbeat. Local login is open again.`)
      note(esc`API token "${args.name}" (${args.role}, id ${id}, ${expires ? `expires ${expires}` : 'never expires'}); shown once:`)
      printLine(clean(token))
    } finally {
      await host.close()
    }
  },
})
