// What a provisioned machine lets in, decided when the provision is
// requested: nothing by default; with --probe the Agent port from the
// Platform's own address (MUSTER_CLOUD_PLATFORM_ADDRESS, else the enrollment
// listener's host, resolved); with --allow-ssh-inbound CIDR port 22 from there.
import { lookup } from 'node:dns/promises'
import { isIP } from 'node:net'
import { MusterError } from '../errors.ts'
import { CLOSED, type Inbound } from './provider.ts'
import { tunable } from '../tunables.ts'

export function parseInbound(json: string | null): Inbound {
  if (!json) return CLOSED
  const v = JSON.parse(json) as Partial<Inbound>
  return { agentFrom: v.agentFrom ?? null, sshFrom: v.sshFrom ?? null }
}

/** A CIDR as `a.b.c.d/n` or IPv6 `x::y/n`, normalised; a bare address is /32 (/128). Refused otherwise. */
export function checkCidr(value: string, field: string): string {
  const [addr, bits, extra] = value.trim().split('/')
  const family = isIP(addr ?? '')
  const max = family === 4 ? 32 : 128
  const n = bits === undefined ? max : /^\d{1,3}$/.test(bits) ? Number(bits) : -1
  if (!family || extra !== undefined || n < 0 || n > max) throw new MusterError('invalid-request', `Invalid ${field}: expected a CIDR like 203.0.113.0/24.`, { field })
  return `${addr}/${n}`
}

/** The address the Platform's probes come from, as a /32 (/128). */
export async function platformSource(enrollmentUrl: string | undefined, env: Record<string, string | undefined> = process.env): Promise<string> {
  const given = tunable('MUSTER_CLOUD_PLATFORM_ADDRESS', env)?.trim()
  if (given) return checkCidr(given, 'MUSTER_CLOUD_PLATFORM_ADDRESS')
  if (!enrollmentUrl) throw new MusterError('cloud-unavailable', 'A probe needs the Platform\'s address: start serve with --enrollment-port, or set MUSTER_CLOUD_PLATFORM_ADDRESS.')
  const host = new URL(enrollmentUrl).hostname.replace(/^\[|\]$/g, '')
  if (isIP(host)) return checkCidr(host, 'address')
  try {
    const { address } = await lookup(host)
    return checkCidr(address, 'address')
  } catch {
    throw new MusterError('cloud-unavailable', `Cannot resolve the Platform's address ${host} for --probe; set MUSTER_CLOUD_PLATFORM_ADDRESS.`)
  }
}

export function inboundJson(i: Inbound): string | null {
  return i.agentFrom || i.sshFrom ? JSON.stringify(i) : null
}
