import { defineCommand } from 'citty'
import { clientArgs } from '../_args.ts'
import { esc, printJson, printLine, printTable } from '../_out.ts'

export default defineCommand({
  meta: { name: 'show', description: 'Show one project: where each replica runs and its state' },
  args: { name: { type: 'positional', required: true, description: 'Project name' }, ...clientArgs },
  async run({ args }) {
    const { clientFrom } = await import('../_client.ts')
    const p = await clientFrom(args).projects.show(args.name)
    if (args.json) return printJson(p)
    printLine(esc`${p.name} (revision ${p.revision}): ${p.replicas} replica(s) of \`${p.command.join(' ')}\`, ${p.cpu}m CPU and ${p.memory} MB each`)
    const env = Object.entries(p.env)
    // Values only for those who may change projects; viewers get "***" from the Platform (docs/security.md).
    if (env.length > 0) printLine(esc`env: ${env.map(([k, v]) => `${k}=${v}`).join(' ')}`)
    const labels = Object.entries(p.nodeLabels ?? {})
    if (labels.length > 0) printLine(esc`runs only on nodes labelled: ${labels.map(([k, v]) => `${k}=${v}`).join(' ')}`)
    if (p.reason) printLine(esc`unplaced: ${p.reason}${p.shortfall ? `, shortfall ${p.shortfall}` : ''}`)
    printTable(['replica', 'node', 'state'], p.placements.map((x) => [x.replica, x.node, x.state + (x.exitCode !== undefined && x.exitCode !== null ? ` (exit ${x.exitCode}${x.reason === 'out-of-memory' ? ', out of memory' : ''})` : '')]))
  },
})
