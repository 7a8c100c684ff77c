import { defineCommand } from 'citty'
import { checkName, clientArgs, intArg } from '../_args.ts'
import { clean, esc, note, printJson, printJsonLine, printLine } from '../_out.ts'

export default defineCommand({
  meta: { name: 'logs', description: 'Print what a replica wrote (stdout and stderr), read from its node through the Platform; --follow goes on printing' },
  args: {
    name: { type: 'positional', required: true, description: 'Project name' },
    replica: { type: 'string', valueHint: 'N', description: 'Which replica (default 0)' },
    tail: { type: 'string', valueHint: 'N', description: 'How many of the last lines (default 100, at most 10000)' },
    follow: { type: 'boolean', description: 'Keep printing what the replica writes until interrupted (Ctrl-C)' },
    ...clientArgs,
  },
  async run({ args }) {
    checkName(args.name, 'NAME')
    const replica = intArg(args, 'replica', 0, 100_000)
    const tail = intArg(args, 'tail', 0, 10_000)
    const { clientFrom } = await import('../_client.ts')
    const client = clientFrom(args)
    if (!args.follow) {
      const r = await client.projects.logs(args.name, { replica, tail })
      if (args.json) return printJson(r)
      if (r.truncated) note(esc`(older lines of ${r.project}/${r.replica} on ${r.node} are not shown; --tail N shows more)`)
      for (const line of r.lines) printLine(clean(line))
      return
    }
    const stop = new AbortController()
    const onSignal = () => stop.abort()
    process.once('SIGINT', onSignal)
    process.once('SIGTERM', onSignal)
    const stopped = new Promise<void>((resolve) => stop.signal.addEventListener('abort', () => resolve()))
    const batches = client.projects.followLogs(args.name, { replica, tail, signal: stop.signal })
    for (;;) {
      // A poll waits up to 20 s for new lines: Ctrl-C ends the command at once, not after it.
      const next = await Promise.race([batches.next(), stopped.then(() => null)])
      if (next === null || next.done) break
      const r = next.value
      // --json: one object per batch, one line each (JSON lines).
      if (args.json) printJsonLine(r)
      else for (const line of r.lines) printLine(clean(line))
    }
  },
})
