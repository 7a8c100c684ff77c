import { defineCommand } from 'citty'
import { clientArgs, intArg, pageArgs } from '../_args.ts'
import { esc, printJson, printLine, printTable } from '../_out.ts'

export default defineCommand({
  meta: { name: 'audit', description: 'Enrollment attempts, newest first, with the reason for each refusal' },
  args: { ...clientArgs, ...pageArgs },
  async run({ args }) {
    const limit = intArg(args, 'limit', 1, 5000)
    const { clientFrom } = await import('../_client.ts')
    const client = clientFrom(args)
    let r = await client.nodes.audit({ limit })
    if (args.all) {
      const entries = [...r.entries]
      while (r.nextCursor !== null) {
        r = await client.nodes.audit({ limit, cursor: r.nextCursor })
        entries.push(...r.entries)
      }
      r = { entries, nextCursor: null }
    }
    if (args.json) return printJson(r)
    printTable(['at', 'outcome', 'node', 'version', 'reason'], r.entries.map((e) => [e.at, e.outcome, e.nodeId, e.version, e.reason]))
    if (r.nextCursor !== null) printLine(esc`(${r.entries.length} shown; --all lists every page)`)
  },
})
