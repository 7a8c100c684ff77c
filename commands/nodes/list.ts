import { defineCommand } from 'citty'
import { clientArgs } from '../_args.ts'

export default defineCommand({
  meta: { name: 'list', description: 'List nodes (state, compatibility, version) and pending enrollments' },
  args: { ...clientArgs },
  async run({ args }) {
    const { clientFrom } = await import('../_client.ts')
    const { printJson, printTable, printLine, ago } = await import('../_out.ts')
    const { formatLabels } = await import('../../src/fabric/labels.ts')
    const r = await clientFrom(args).nodes.list()
    if (args.json) return printJson({ nodes: r.nodes, pendingEnrollments: r.pendingEnrollments })
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
    if (r.pendingEnrollments.length > 0) {
      printLine()
      printTable(['pending enrollment', 'expires'], r.pendingEnrollments.map((p) => [p.nodeId, p.expiresAt]))
    }
  },
})
