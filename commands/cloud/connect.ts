import { defineCommand } from 'citty'
import { clientArgs } from '../_args.ts'
import { esc } from '../_out.ts'

export default defineCommand({
  meta: { name: 'connect', description: 'Connect a cloud provider: credentials from stdin or a no-echo prompt (never argv), proved by a list call, kept sealed' },
  args: {
    provider: {
      type: 'string',
      required: true,
      valueHint: 'hetzner|digitalocean|aws|azure|gcp',
      description:
        'hetzner, digitalocean: the API token; aws: {"accessKeyId","secretAccessKey","region"?} (with "roleArn","externalId"? the key only assumes that role), or keyless {"roleArn","externalId"?,"region"?} or {"ambient":true}; ' +
        'azure: {"tenantId","clientId","clientSecret"|"federatedTokenFile","subscriptionId","resourceGroup"}; gcp: the service account key file',
    },
    ...clientArgs,
  },
  async run({ args }) {
    const { checkProvider } = await import('./_provider.ts')
    const provider = checkProvider(args.provider)
    const { readSecret } = await import('../_secret.ts')
    const credentials = await readSecret({ what: provider === 'hetzner' || provider === 'digitalocean' ? `${provider} API token` : `${provider} credentials (JSON)` })
    const { clientFrom } = await import('../_client.ts')
    const c = await clientFrom(args).cloud.connect(provider, credentials)
    if (args.json) return (await import('../_out.ts')).printJson(c)
    const { consola } = await import('consola')
    consola.success(esc`${provider} connected: the credentials were accepted by a list call and are kept sealed${c.account ? ` (${c.account})` : ''}.`)
  },
})
