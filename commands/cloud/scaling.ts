import { defineCommand } from 'citty'
import { clientArgs, intArg } from '../_args.ts'
import { esc, printLine } from '../_out.ts'

export default defineCommand({
  meta: { name: 'scaling', description: 'Show or change automatic scale-out (off until enabled; lets the Platform spend without a person)' },
  args: {
    enable: { type: 'boolean', description: 'Allow the Platform to request machines for a lasting shortfall' },
    disable: { type: 'boolean', description: 'Forbid it' },
    'max-machines': { type: 'string', valueHint: 'N', description: 'Never more machines created by this Platform than this' },
    'cooldown-minutes': { type: 'string', valueHint: 'N', description: 'Minutes between two requests' },
    provider: { type: 'string', valueHint: 'P', description: 'What to order: the provider' },
    region: { type: 'string', valueHint: 'REGION', description: 'What to order: the region' },
    size: { type: 'string', valueHint: 'SIZE', description: 'What to order: the size' },
    role: { type: 'string', valueHint: 'general|build', description: 'What to order: the role' },
    ...clientArgs,
  },
  async run({ args }) {
    const { UsageError } = await import('../_args.ts')
    if (args.enable && args.disable) throw new UsageError('give --enable or --disable, not both')
    if (args.role !== undefined && args.role !== 'general' && args.role !== 'build') throw new UsageError(`--role must be general or build, got "${args.role}"`)
    const { checkProvider } = await import('./_provider.ts')
    const body = {
      enabled: args.enable ? true : args.disable ? false : undefined,
      maxMachines: intArg(args, 'max-machines', 1, 1000),
      cooldownMinutes: intArg(args, 'cooldown-minutes', 1, 1440),
      provider: args.provider === undefined ? undefined : checkProvider(args.provider),
      region: args.region,
      size: args.size,
      role: args.role as 'general' | 'build' | undefined,
    }
    const { clientFrom } = await import('../_client.ts')
    const client = clientFrom(args)
    const changing = Object.values(body).some((x) => x !== undefined)
    const s = changing ? await client.cloud.setScaling(body) : await client.cloud.scaling()
    if (args.json) return (await import('../_out.ts')).printJson(s)
    printLine(esc`scale-out: ${s.enabled ? 'on' : 'off'}`)
    printLine(esc`  orders: ${s.provider ?? '-'} ${s.region ?? '-'} ${s.size ?? '-'} (${s.role})`)
    printLine(esc`  at most ${s.maxMachines} machine(s); cooldown ${s.cooldownMinutes} min; last request ${s.lastRequestAt ?? 'never'}`)
  },
})
