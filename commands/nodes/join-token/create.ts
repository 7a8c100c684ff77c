import { defineCommand } from 'citty'
import { clientArgs, intArg, UsageError } from '../../_args.ts'
import { clean, esc, note, printJsonLine, printLine } from '../../_out.ts'

export default defineCommand({
  meta: { name: 'create', description: 'Create a fleet join token (shown once), then the lines to run on the new machines' },
  args: {
    'max-uses': { type: 'string', valueHint: 'N', description: 'How many machines may enroll with it (default 1)' },
    'name-pattern': { type: 'string', valueHint: 'GLOB', description: 'Names it may enroll, like rack1-*' },
    'ttl-minutes': { type: 'string', valueHint: 'MINUTES', description: 'Minutes until it expires (default 1440, at most 43200 = 30 days)' },
    label: { type: 'string', valueHint: 'TEXT', description: 'A note for the listing' },
    ...clientArgs,
  },
  async run({ args }) {
    if (args['name-pattern'] !== undefined && !/^[a-z0-9*?][a-z0-9*?-]{0,62}$/.test(args['name-pattern'])) throw new UsageError(`--name-pattern must be name characters with * and ?, like rack1-*, got "${args['name-pattern']}"`)
    const maxUses = intArg(args, 'max-uses', 1, 1_000_000)
    const ttlMinutes = intArg(args, 'ttl-minutes', 1, 43200)
    const { clientFrom } = await import('../../_client.ts')
    const t = await clientFrom(args).nodes.createJoinToken({ maxUses, ttlMinutes, namePattern: args['name-pattern'], label: args.label })
    if (args.json) return void printJsonLine(t)
    note(esc`Fleet token ${t.id}: ${t.maxUses} use(s), names ${t.namePattern ?? 'any'}, valid until ${t.expiresAt}. Shown once:`)
    printLine(clean(t.token))
    const { printJoinLines } = await import('../_join-lines.ts')
    printJoinLines(t, { pattern: t.namePattern })
  },
})
