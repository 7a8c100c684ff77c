// The provider argument shared by the cloud commands.
import { UsageError } from '../_args.ts'
import type { ProviderName } from '../../src/wire/cloud.ts'

export const PROVIDER_NAMES: readonly ProviderName[] = ['hetzner', 'digitalocean', 'aws', 'azure', 'gcp']

export function checkProvider(value: string | undefined, flag = '--provider'): ProviderName {
  if (!value) throw new UsageError(`${flag} is required: one of ${PROVIDER_NAMES.join(', ')}`)
  const found = PROVIDER_NAMES.find((p) => p === value)
  if (!found) throw new UsageError(`${flag} must be one of ${PROVIDER_NAMES.join(', ')}, got "${value}"`)
  return found
}
