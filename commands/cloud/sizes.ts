import { defineCommand } from 'citty'
import { clientArgs } from '../_args.ts'

export default defineCommand({
  meta: { name: 'sizes', description: 'Machine sizes a connected provider offers (azure and gcp need --region)' },
  args: {
    provider: { type: 'positional', required: true, description: 'hetzner, digitalocean, aws, azure or gcp' },
    region: { type: 'string', valueHint: 'REGION', description: 'Only sizes offered in this region' },
    ...clientArgs,
  },
  async run({ args }) {
    const { checkProvider } = await import('./_provider.ts')
    const provider = checkProvider(args.provider, 'PROVIDER')
    const { clientFrom } = await import('../_client.ts')
    const { printJson, printTable } = await import('../_out.ts')
    const r = await clientFrom(args).cloud.sizes(provider, args.region)
    if (args.json) return printJson(r)
    printTable(['size', 'cpus', 'memory', 'disk', 'per month'], r.sizes.map((s) => [s.id, s.cpus, `${s.memoryMB} MB`, s.diskGB === null ? null : `${s.diskGB} GB`, s.priceMonthly === null ? 'see provider' : `${s.priceMonthly.toFixed(2)}${s.currency ? ` ${s.currency}` : ''}`]))
  },
})
