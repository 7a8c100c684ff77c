// What provider clients are built with in tests: endpoints pointed at a fake,
// an x86-64 binary, no ambient AWS credentials, and a short backoff (reset
// headers are still honoured as the provider gives them).
import { endpointsFromEnv, type Arch, type CloudEndpoints, type ProviderContext } from '../../src/cloud/provider.ts'
import type { RetryPolicy } from '../../src/cloud/retry.ts'

export const FAST_RETRY: RetryPolicy = { attempts: 8, maxWaitMs: 15_000, baseMs: 5, capMs: 100, sleep: (ms) => Bun.sleep(ms) }

export function ctx(endpoints: Partial<CloudEndpoints> = {}, more: { arch?: Arch; env?: Record<string, string | undefined>; retry?: RetryPolicy } = {}): ProviderContext {
  return { endpoints: { ...endpointsFromEnv({}), ...endpoints }, retry: more.retry ?? FAST_RETRY, arch: more.arch ?? 'x86_64', env: more.env ?? { AWS_EC2_METADATA_DISABLED: 'true' } }
}

export const hz = (base: string, arch: Arch = 'x86_64') => ({ base, retry: FAST_RETRY, arch })
