import { defineCommand } from 'citty'
import { clientArgs } from '../_args.ts'

export default defineCommand({
  meta: { name: 'regions', description: 'Regions (or zones) a connected provider offers' },
  args: { provider: { type: 'positional', required: true, description: 'hetzner, digitalocean, aws, azure or gcp' }, ...clientArgs },
  async run({ args }) {
    const { checkProvider } = await import('./_provider.ts')
    const provider = checkProvider(args.provider, 'PROVIDER')
    const { clientFrom } = await import('../_client.ts')
    const { printJson, printTable } = await import('../_out.ts')
    const r = await clientFrom(args).cloud.regions(provider)
    if (args.json) return printJson(r)
    printTable(['region', 'name', 'available'], r.regions.map((x) => [x.id, x.name, x.available ? 'yes' : 'no']))
  },
})
