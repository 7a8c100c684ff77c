// Builds the client for one provider from its (opened) credentials.
import type { AwsCredentials, AzureCredentials, CloudProvider, Credentials, GcpCredentials, ProviderContext, TokenCredentials } from '../provider.ts'
import { AwsProvider } from './aws.ts'
import { AzureProvider } from './azure.ts'
import { DigitalOceanProvider } from './digitalocean.ts'
import { GcpProvider } from './gcp.ts'
import { HetznerProvider } from './hetzner.ts'
import type { ProviderName } from '../../wire/cloud.ts'

export function createProvider(name: ProviderName, creds: Credentials, ctx: ProviderContext): CloudProvider {
  const e = ctx.endpoints
  switch (name) {
    case 'hetzner':
      return new HetznerProvider(creds as TokenCredentials, { ...ctx, base: e.hetzner })
    case 'digitalocean':
      return new DigitalOceanProvider(creds as TokenCredentials, { ...ctx, base: e.digitalocean })
    case 'aws':
      return new AwsProvider(creds as AwsCredentials, ctx)
    case 'azure':
      return new AzureProvider(creds as AzureCredentials, { ...ctx, arm: e.azure, login: e.azureLogin })
    case 'gcp':
      return new GcpProvider(creds as GcpCredentials, { ...ctx, base: e.gcp, tokenUrl: e.gcpToken })
  }
}
