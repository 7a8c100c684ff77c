import { defineCommand } from 'citty'
import { clientArgs } from '../_args.ts'
import { esc } from '../_out.ts'

export default defineCommand({
  meta: { name: 'release', description: 'Delete a machine this Platform created, and revoke and remove its node' },
  args: { id: { type: 'positional', required: true, description: 'A provision id (prv-…)' }, ...clientArgs },
  async run({ args }) {
    const { clientFrom } = await import('../_client.ts')
    const p = await clientFrom(args).cloud.release(args.id)
    if (args.json) return (await import('../_out.ts')).printJson(p)
    const { consola } = await import('consola')
    consola.success(esc`${p.id} ${p.name}: ${p.reason ?? 'released'}`)
  },
})
