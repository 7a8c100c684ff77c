import { defineCommand } from 'citty'
import { clientArgs } from '../_args.ts'
import { esc } from '../_out.ts'

export default defineCommand({
  meta: { name: 'disconnect', description: 'Forget a provider’s credentials (refused while machines it created exist)' },
  args: { provider: { type: 'positional', required: true, description: 'hetzner, digitalocean, aws, azure or gcp' }, ...clientArgs },
  async run({ args }) {
    const { checkProvider } = await import('./_provider.ts')
    const provider = checkProvider(args.provider, 'PROVIDER')
    const { clientFrom } = await import('../_client.ts')
    const r = await clientFrom(args).cloud.disconnect(provider)
    if (args.json) return (await import('../_out.ts')).printJson(r)
    const { consola } = await import('consola')
    consola.success(esc`${provider} disconnected; its credentials are gone.`)
  },
})
