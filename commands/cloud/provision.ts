import { defineCommand } from 'citty'
import { clientArgs } from '../_args.ts'
import { esc } from '../_out.ts'

export default defineCommand({
  meta: { name: 'provision', description: 'Create a machine at a provider that installs the worker role and joins this Platform by itself' },
  args: {
    provider: { type: 'string', valueHint: 'P', required: true, description: 'hetzner, digitalocean, aws, azure or gcp' },
    name: { type: 'string', valueHint: 'NAME', required: true, description: 'The node name (and machine name), like worker-1' },
    region: { type: 'string', valueHint: 'REGION', required: true, description: 'From `muster cloud regions P`' },
    size: { type: 'string', valueHint: 'SIZE', required: true, description: 'From `muster cloud sizes P`' },
    role: { type: 'string', valueHint: 'general|build', default: 'general', description: 'What the machine is for: its node carries the label role=ROLE' },
    probe: { type: 'boolean', description: "Open the Agent port to this Platform's address only, so it can probe the node (default: the machine opens no port)" },
    'allow-ssh-inbound': { type: 'string', valueHint: 'CIDR', description: 'Open port 22 to this CIDR (default: SSH is closed and stopped)' },
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
    const ssh = args['allow-ssh-inbound']
    if (ssh !== undefined && !/^[0-9a-fA-F.:]+(\/\d{1,3})?$/.test(ssh)) throw new UsageError(`--allow-ssh-inbound must be a CIDR like 203.0.113.0/24, got "${ssh}"`)
    const p = await clientFrom(args).cloud.provision({ provider, name: args.name!, region: args.region!, size: args.size!, role: args.role, ...(args.probe ? { probe: true } : {}), ...(ssh ? { allowSshInbound: ssh } : {}) })
    if (args.json) (await import('../_out.ts')).printJson(p)
    if (p.state === 'failed') {
      const { MusterError } = await import('../../src/errors.ts')
      throw new MusterError('cloud-provider-error', `${p.id} ${p.name} failed: ${p.reason}`)
    }
    if (args.json) return
    const { consola } = await import('consola')
    consola.success(esc`${p.id}: ${p.name} is ${p.state} at ${p.provider} (machine ${p.machineId ?? 'pending'}). Follow it with \`muster cloud provisions ${p.id}\`.`)
  },
})
