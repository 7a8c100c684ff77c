import { defineCommand } from 'citty'
import { clientArgs, intArg, multiArg, UsageError } from '../_args.ts'

/** `90s`, `5m`, `1h`, or seconds. */
export function seconds(raw: string | undefined, flag: string): number | undefined {
  if (raw === undefined) return undefined
  const m = /^(\d{1,7})(s|m|h)?$/.exec(raw)
  if (!m) throw new UsageError(`${flag} must be a duration like 30s, 5m or 1h, got "${raw}"`)
  return Number(m[1]) * (m[2] === 'h' ? 3600 : m[2] === 'm' ? 60 : 1)
}

export default defineCommand({
  meta: { name: 'start', description: 'Roll VERSION out to the nodes (a release of it must exist): canaries first, then the rest, never more than --max-unavailable at a time; prints the rollout id' },
  args: {
    version: { type: 'positional', required: true, description: 'The released version to roll out' },
    selector: { type: 'string', valueHint: 'LABEL=VALUE', description: 'Only nodes with this label (repeatable: all of them)' },
    canaries: { type: 'string', valueHint: 'N', description: 'How many nodes go first (default: one per distinct architecture and label set)' },
    'max-unavailable': { type: 'string', valueHint: 'N|P%', description: 'At most this many nodes (or share of them) updating at once (default 1)' },
    'max-failures': { type: 'string', valueHint: 'N', description: 'Failures (after the canaries) tolerated before the rollout halts (default 0)' },
    soak: { type: 'string', valueHint: 'DURATION', description: 'Wait this long after the canaries before the rest (30s, 5m; default 0)' },
    'health-timeout': { type: 'string', valueHint: 'DURATION', description: 'How long a new Agent has to heartbeat and adopt its replicas (default 60s)' },
    ...clientArgs,
  },
  async run({ args, rawArgs }) {
    const mu = args['max-unavailable']
    if (mu !== undefined && !/^(\d{1,6}|\d{1,3}(\.\d{1,2})?%)$/.test(mu)) throw new UsageError(`--max-unavailable must be a number or a percentage (3, 5%), got "${mu}"`)
    const body = {
      version: args.version,
      ...(multiArg(rawArgs, 'selector').length ? { selector: multiArg(rawArgs, 'selector') } : {}),
      canaries: intArg(args, 'canaries', 1, 10_000),
      maxUnavailable: mu,
      maxFailures: intArg(args, 'max-failures', 0, 1_000_000),
      soakSeconds: seconds(args.soak, '--soak'),
      healthTimeoutSeconds: seconds(args['health-timeout'], '--health-timeout'),
    }
    const { clientFrom } = await import('../_client.ts')
    const r = await clientFrom(args).rollouts.start(body)
    const { printJson, printLine } = await import('../_out.ts')
    if (args.json) return printJson({ id: r.id, version: r.version, state: r.state, reason: r.reason, nodes: r.nodes.map((n) => ({ name: n.name, state: n.state, from: n.from, to: n.to, error: n.error })) })
    printLine(r.id)
    const canaries = r.nodes.filter((n) => n.canary).map((n) => n.name)
    process.stderr.write(`Rollout ${r.id} to ${r.version} started: ${r.nodes.length} node(s), canaries ${canaries.join(', ') || 'none'}, at most ${r.maxUnavailableNodes} at a time. Follow it: muster rollouts status ${r.id}\n`)
  },
})
