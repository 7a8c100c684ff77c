import { defineCommand } from 'citty'
import { clientArgs } from '../_args.ts'

export default defineCommand({
  meta: { name: 'provision', description: 'Create a machine at a provider that installs the worker role and joins this Platform by itself' },
  args: {
    provider: { type: 'string', valueHint: 'P', required: true, description: 'hetzner, digitalocean, aws, azure or gcp' },
    name: { type: 'string', valueHint: 'NAME', required: true, description: 'The node name (and machine name), like worker-1' },
    region: { type: 'string', valueHint: 'REGION', required: true, description: 'From `muster cloud regions P`' },
    size: { type: 'string', valueHint: 'SIZE', required: true, description: 'From `muster cloud sizes P`' },
    role: { type: 'string', valueHint: 'general|build', default: 'general', description: 'What the machine is for' },
    ...clientArgs,
  },
  async run({ args }) {
    const { UsageError, checkName } = await import('../_args.ts')
    const { checkProvider } = await import('./_provider.ts')
    const provider = checkProvider(args.provider)
    for (const f of ['name', 'region', 'size'] as const) if (!args[f]) throw new UsageError(`--${f} is required`)
    checkName(args.name!, '--name')
    if (args.role !== 'general' && args.role !== 'build') throw new UsageError(`--role must be general or build, got "${args.role}"`)
    const { clientFrom } = await import('../_client.ts')
    const p = await clientFrom(args).cloud.provision({ provider, name: args.name!, region: args.region!, size: args.size!, role: args.role })
    if (args.json) (await import('../_out.ts')).printJson(p)
    if (p.state === 'failed') {
      const { MusterError } = await import('../../src/errors.ts')
      throw new MusterError('cloud-provider-error', `${p.id} ${p.name} failed: ${p.reason}`)
    }
    if (args.json) return
    const { consola } = await import('consola')
    consola.success(`${p.id}: ${p.name} is ${p.state} at ${p.provider} (machine ${p.machineId ?? 'pending'}). Follow it with \`muster cloud provisions ${p.id}\`.`)
  },
})
