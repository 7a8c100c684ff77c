import { defineCommand } from 'citty'
import { clientArgs, intArg, UsageError } from './_args.ts'

/** --since: an ISO time, or how long ago (30m, 12h, 7d). */
function sinceArg(value: string | undefined, now = Date.now()): string | undefined {
  if (value === undefined) return undefined
  const d = /^(\d{1,6})([smhd])$/.exec(value)
  if (d) return new Date(now - Number(d[1]) * { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }[d[2] as 's' | 'm' | 'h' | 'd']).toISOString()
  if (/^\d{4}-\d{2}-\d{2}/.test(value) && Number.isFinite(Date.parse(value))) return new Date(Date.parse(value)).toISOString()
  throw new UsageError(`--since must be a time like 2026-12-01 or 2026-12-01T10:00:00Z, or how long ago like 30m, 12h, 7d; got "${value}"`)
}

export default defineCommand({
  meta: { name: 'audit', description: 'The audit of every action: who did what, from where, to what, and how it ended (server.audit.view)' },
  args: {
    since: { type: 'string', valueHint: 'TIME', description: 'Entries from then on: 2026-12-01, an ISO time, or how long ago (30m, 12h, 7d)' },
    principal: { type: 'string', valueHint: 'NAME', description: 'Only this principal: an account, token:<id> for a token of no account, (host), (controller) or (unknown)' },
    action: { type: 'string', valueHint: 'ACTION', description: 'Only this action (node.drain), or every action it starts (node)' },
    all: { type: 'boolean', description: 'Every page within the retention, not only the newest page' },
    limit: { type: 'string', valueHint: 'N', description: 'Entries per page (default 100, at most 5000)' },
    follow: { type: 'boolean', alias: 'f', description: 'Keep printing new entries as they are written (Ctrl-C stops)' },
    jsonl: { type: 'boolean', description: 'One JSON object per line, oldest first: for a SIEM or a log shipper' },
    ...clientArgs,
  },
  async run({ args }) {
    const limit = intArg(args, 'limit', 1, 5000) ?? 100
    const q = { since: sinceArg(args.since), principal: args.principal || undefined, action: args.action || undefined }
    const { clientFrom } = await import('./_client.ts')
    const { clean, jsonText, printJson, printLine, printTable } = await import('./_out.ts')
    const client = clientFrom(args)
    const entries = args.all ? await client.audit.listAll({ ...q, limit: 5000 }) : (await client.audit.list({ ...q, limit })).entries
    type Entry = (typeof entries)[number]
    const row = (e: Entry) => [e.at, `${e.principal} (${e.principalKind})`, e.source, e.action, e.target, e.outcome, e.detail]
    const headers = ['at', 'principal', 'source', 'action', 'target', 'outcome', 'detail']
    // Every field is cleaned: a target or detail from outside is one inert line (docs/security.md).
    const line = (e: Entry) => (args.jsonl || args.json ? jsonText(e) : row(e).map((c) => (c === null || c === undefined ? '-' : clean(c))).join('  '))
    if (!args.follow) {
      if (args.jsonl) return void entries.toReversed().forEach((e) => printLine(jsonText(e)))
      if (args.json) return printJson({ entries })
      return printTable(headers, entries.map(row))
    }
    // --follow: what there is (oldest first), then every new entry as it is written.
    let last = entries.reduce((m, e) => Math.max(m, e.id), 0)
    if (!args.jsonl && !args.json) printLine(headers.map((h) => h.toUpperCase()).join('  '))
    for (const e of entries.toReversed()) printLine(line(e))
    for (;;) {
      await Bun.sleep(1000)
      const page = await client.audit.after(last, { ...q, limit: 1000 })
      for (const e of page.entries) {
        printLine(line(e))
        last = Math.max(last, e.id)
      }
    }
  },
})
