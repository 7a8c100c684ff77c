import { defineCommand } from 'citty'
import { clientArgs, UsageError } from '../_args.ts'

export default defineCommand({
  meta: { name: 'status', description: 'A rollout (default: the newest): its state and, per node, pending | downloading | installing | restarting | done | failed | rolled-back | skipped with the last error' },
  args: { id: { type: 'positional', required: false, description: 'Rollout id (from rollouts start or list)' }, ...clientArgs },
  async run({ args }) {
    if (args.id !== undefined && !/^[a-z2-7]{12}$/.test(args.id)) throw new UsageError(`ID must be a rollout id of 12 characters (muster rollouts list), got "${args.id}"`)
    const { clientFrom } = await import('../_client.ts')
    const r = await clientFrom(args).rollouts.status(args.id)
    const { printJson } = await import('../_out.ts')
    if (args.json) return printJson({ id: r.id, version: r.version, state: r.state, reason: r.reason, nodes: r.nodes.map((n) => ({ name: n.name, state: n.state, from: n.from, to: n.to, error: n.error })) })
    const { showRollout } = await import('./_show.ts')
    showRollout(r)
  },
})
