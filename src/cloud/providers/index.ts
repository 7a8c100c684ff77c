// Builds the client for one provider from its (opened) credentials.
import type { AwsCredentials, AzureCredentials, CloudEndpoints, CloudProvider, Credentials, GcpCredentials, ProviderName, TokenCredentials } from '../provider.ts'
import { AwsProvider } from './aws.ts'
import { AzureProvider } from './azure.ts'
import { DigitalOceanProvider } from './digitalocean.ts'
import { GcpProvider } from './gcp.ts'
import { HetznerProvider } from './hetzner.ts'

export function createProvider(name: ProviderName, creds: Credentials, endpoints: CloudEndpoints): CloudProvider {
  switch (name) {
    case 'hetzner':
      return new HetznerProvider(creds as TokenCredentials, endpoints.hetzner)
    case 'digitalocean':
      return new DigitalOceanProvider(creds as TokenCredentials, endpoints.digitalocean)
    case 'aws':
      return new AwsProvider(creds as AwsCredentials, endpoints.aws)
    case 'azure':
      return new AzureProvider(creds as AzureCredentials, endpoints.azure, endpoints.azureLogin)
    case 'gcp':
      return new GcpProvider(creds as GcpCredentials, endpoints.gcp, endpoints.gcpToken)
  }
}
