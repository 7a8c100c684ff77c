// A machine created at a provider must reach this Platform:
// a Platform whose enrollment listener, node-facing API or binary download is
// on a loopback address would have the machine billed and never joined, so
// provisioning refuses it before anything is ordered, with the flag that
// fixes it. A provider endpoint on this machine (a local emulator or a test's
// fake) runs its "machines" here, where loopback is reachable.
import { isLoopback } from '../addresses.ts'
import type { CloudEndpoints } from './provider.ts'
import type { ProviderName } from '../wire/cloud.ts'

const hostOf = (url: string) => (URL.canParse(url) ? new URL(url).hostname.replace(/^\[(.*)\]$/, '$1') : '')
const loopbackUrl = (url: string | undefined) => url !== undefined && isLoopback(hostOf(url))

/** The provider's API endpoint, or null for the real one (AWS's per-region URLs). */
function endpointOf(endpoints: CloudEndpoints, provider: ProviderName): string | null {
  return endpoints[provider as keyof CloudEndpoints] ?? null
}

/** Why a machine at `provider` could never reach this Platform, or null when it could. */
export function unreachableReason(provider: ProviderName, endpoints: CloudEndpoints, urls: { enrollmentUrl?: string; apiUrl: string; binaryUrl?: string }): string | null {
  const endpoint = endpointOf(endpoints, provider)
  if (endpoint !== null && loopbackUrl(endpoint)) return null
  const at = `a machine at ${provider} could never reach it, yet would be billed`
  if (loopbackUrl(urls.enrollmentUrl)) return `the enrollment listener is at ${urls.enrollmentUrl}, a loopback address: ${at}. Start serve with --host ADDR --enrollment-port PORT, ADDR an address those machines reach (or --enrollment-address ADDR)`
  if (loopbackUrl(urls.apiUrl)) return `nodes would heartbeat to ${urls.apiUrl}, a loopback address: ${at}. Start serve with --host ADDR or --public-url https://ADDR:PORT`
  if (loopbackUrl(urls.binaryUrl)) return `the machine would download muster from ${urls.binaryUrl}, a loopback address: ${at}. Start serve with --public-url https://ADDR:PORT, or set MUSTER_CLOUD_BINARY_URL and MUSTER_CLOUD_BINARY_SHA256`
  return null
}
