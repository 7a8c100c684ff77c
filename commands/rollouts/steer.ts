// pause, resume, cancel: one verb each on one rollout.
import { defineCommand } from 'citty'
import { clientArgs, UsageError } from '../_args.ts'

const idArg = { id: { type: 'positional', required: true, description: 'Rollout id (muster rollouts list)' } } as const

function verb(name: 'pause' | 'resume' | 'cancel', description: string, said: string) {
  return defineCommand({
    meta: { name, description },
    args: { ...idArg, ...clientArgs },
    async run({ args }) {
      if (!/^[a-z2-7]{12}$/.test(args.id)) throw new UsageError(`ID must be a rollout id of 12 characters (muster rollouts list), got "${args.id}"`)
      const { clientFrom } = await import('../_client.ts')
      const r = await clientFrom(args).rollouts[name](args.id)
      const { printJson } = await import('../_out.ts')
      if (args.json) return printJson({ id: r.id, version: r.version, state: r.state, reason: r.reason, nodes: r.nodes.map((n) => ({ name: n.name, state: n.state, from: n.from, to: n.to, error: n.error })) })
      process.stderr.write(`Rollout ${r.id} ${said} (now ${r.state}).\n`)
    },
  })
}

export const pause = verb('pause', 'Pause the rollout: no further node is told to update (those updating now finish; resume carries on)', 'paused')
export const resume = verb('resume', 'Carry on a paused or halted rollout (a halted one accepts the failures that halted it)', 'resumed')
export const cancel = verb('cancel', 'End the rollout: no further node is told (those updating now finish; the others keep their version)', 'cancelled')
