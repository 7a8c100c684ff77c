import { defineCommand } from 'citty'
import { clientArgs, intArg, pageArgs, UsageError } from '../_args.ts'
import { ago, esc, printJson, printLine, printTable } from '../_out.ts'

const STATES = ['enrolled', 'ready', 'unreachable', 'revoked'] as const

export default defineCommand({
  meta: { name: 'list', description: 'List nodes (state, compatibility, version) and pending enrollments, a page at a time' },
  args: {
    ...clientArgs,
    ...pageArgs,
    state: { type: 'string', valueHint: 'STATE', description: 'Only nodes in this state (enrolled, ready, unreachable, revoked)' },
    label: { type: 'string', valueHint: 'KEY=VALUE', description: 'Only nodes with this label' },
  },
  async run({ args }) {
    const limit = intArg(args, 'limit', 1, 5000)
    const state = args.state as (typeof STATES)[number] | undefined
    if (state !== undefined && !STATES.includes(state)) throw new UsageError(`--state must be one of ${STATES.join(', ')}, got "${state}"`)
    if (args.label !== undefined) {
      // The same keys and values as node labels (worker join --label, the nodes file).
      const { parseLabelArgs } = await import('../../src/wire/labels.ts')
      try {
        parseLabelArgs([args.label], '--label')
      } catch (e) {
        throw new UsageError((e as Error).message)
      }
    }
    const { clientFrom } = await import('../_client.ts')
    const { formatLabels } = await import('../../src/wire/labels.ts')
    const client = clientFrom(args)
    const opts = { limit, state, label: args.label }
    const r = args.all ? await client.nodes.listAll(opts) : await client.nodes.list(opts)
    if (args.json) return printJson({ nodes: r.nodes, pendingEnrollments: r.pendingEnrollments, nextCursor: r.nextCursor, counts: r.counts })
    printTable(
      ['name', 'state', 'compat', 'version', 'auth', 'last seen', 'labels', 'certificate', 'note'],
      r.nodes.map((n) => [
        n.name,
        n.state,
        n.compatibility,
        n.version,
        n.auth,
        n.auth === 'local' ? 'now' : ago(n.lastSeenAt),
        formatLabels(n.labels),
        n.certificateSha256?.slice(0, 12),
        [n.declared ? 'declared' : '', n.drained ? 'drained' : '', n.reason ?? ''].filter(Boolean).join('; '),
      ]),
    )
    if (r.nextCursor !== null) {
      const c = r.counts
      printLine(esc`(${r.nodes.length} shown of ${state ? c[state] : c.total}; --all lists every page)`)
    }
    if (r.pendingEnrollments.length > 0) {
      printLine()
      printTable(['pending enrollment', 'expires'], r.pendingEnrollments.map((p) => [p.nodeId, p.expiresAt]))
    }
  },
})
