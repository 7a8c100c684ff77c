import { defineCommand } from 'citty'
import { checkName, clientArgs, intArg } from '../_args.ts'
import { clean, esc, note, printJsonLine, printLine } from '../_out.ts'

export default defineCommand({
  meta: { name: 'enroll-token', description: 'Issue a single-use enrollment for one node name (the token is shown once), then the lines to run on the machine' },
  args: {
    name: { type: 'positional', required: true, description: 'Node name, like worker-1' },
    'ttl-minutes': { type: 'string', valueHint: 'MINUTES', default: '60', description: 'Minutes until it expires (at most 1440)' },
    replace: { type: 'boolean', description: 'Replace an unused enrollment for this name (or reuse a removed name)' },
    ...clientArgs,
  },
  async run({ args }) {
    checkName(args.name, 'NAME')
    const ttlMinutes = intArg(args, 'ttl-minutes', 1, 1440)
    const { clientFrom } = await import('../_client.ts')
    const e = await clientFrom(args).nodes.createEnrollment({ nodeId: args.name, ttlMinutes, replace: args.replace || undefined })
    if (args.json) return void printJsonLine(e)
    note(esc`Enrollment for ${e.nodeId}, single use, valid until ${e.expiresAt}. The token is shown once:`)
    printLine(clean(e.token))
    const { printJoinLines } = await import('./_join-lines.ts')
    printJoinLines(e, null)
  },
})
