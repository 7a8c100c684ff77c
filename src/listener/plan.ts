// Where the enrollment listener binds and which addresses it publishes
// (docs/operations.md: every address flag binds what it says), and the refusal of a
// Platform whose listener other machines reach while its API is loopback-only
// or whose nodes would send their credentials over plain http.
//   - the addresses: --enrollment-address, else the API's --host (when it is a
//     specific non-loopback address) and localhost, else this machine's first
//     routable IPv4 and localhost;
//   - the binds: exactly those addresses (localhost is 127.0.0.1), or every
//     interface when one of them is a DNS name (it may point anywhere) or
//     when --host is a wildcard and no --enrollment-address is given.
import { isIP } from 'node:net'
import { defaultAddresses, isLoopback, normaliseAddresses } from '../addresses.ts'
import { MusterError } from '../errors.ts'
import type { PlatformOptions } from '../context/options.ts'

export interface ListenerPlan {
  /** Published (the first is the URL) and named by the certificate. */
  addresses: string[]
  /** The local addresses the port is bound on. */
  binds: string[]
}

const WILDCARDS = new Set(['0.0.0.0', '::'])
const bare = (a: string) => a.replace(/^\[(.*)\]$/, '$1')

export function listenerPlan(o: Pick<PlatformOptions, 'host' | 'enrollmentAddresses' | 'enrollmentHost'>): ListenerPlan {
  const given = normaliseAddresses(o.enrollmentAddresses ?? [], '--enrollment-address')
  const wildcard = given.find((a) => WILDCARDS.has(a))
  if (wildcard) throw new MusterError('invalid-request', `--enrollment-address ${wildcard}: nodes cannot reach a wildcard; give the address they use (the listener binds it), or leave the flag out`)
  const host = bare(o.host ?? '127.0.0.1')
  const hostIsSpecific = !isLoopback(host) && !WILDCARDS.has(host)
  const addresses = given.length > 0 ? given : hostIsSpecific ? [host, 'localhost'] : defaultAddresses()
  if (o.enrollmentHost) return { addresses, binds: [o.enrollmentHost] }
  // --host 0.0.0.0 (or ::) and no addresses given: the listener binds every interface too, like the API.
  if (given.length === 0 && WILDCARDS.has(host)) return { addresses, binds: [host] }
  return { addresses, binds: bindsFor(addresses) }
}

/** The addresses themselves (localhost → 127.0.0.1); every interface when one is a DNS name. */
export function bindsFor(addresses: string[]): string[] {
  if (addresses.some((a) => !isIP(a) && a !== 'localhost')) return [addresses.some((a) => isIP(a) === 6) ? '::' : '0.0.0.0']
  return [...new Set(addresses.map((a) => (a === 'localhost' ? '127.0.0.1' : a)))]
}

const shellQuote = (s: string) => (/^[A-Za-z0-9_./:=@,+-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`)

/** `argv` with every --host (and its value) replaced by `--host VALUE` at the end. */
function withHost(argv: string[], value: string): string[] {
  const out: string[] = []
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!
    if (a === '--host') {
      i++
      continue
    }
    if (a.startsWith('--host=')) continue
    out.push(a)
  }
  return [...out, '--host', value]
}

/**
 * docs/operations.md: a listener other machines reach, an API only this machine
 * reaches and no --public-url: nodes would enroll and then never heartbeat.
 * Refused with the command that fixes it (`command`: how serve was started,
 * e.g. ['muster', 'serve', '--enrollment-port', '7443']).
 */
export function refuseUnreachableApi(o: PlatformOptions, command?: string[]): void {
  if (o.enrollmentPort === undefined || o.publicUrl) return
  const host = bare(o.host ?? '127.0.0.1')
  if (!isLoopback(host)) return
  const plan = listenerPlan(o)
  if (plan.binds.every(isLoopback)) return
  const reachable = plan.addresses.find((a) => !isLoopback(a)) ?? plan.binds[0]!
  const apiHost = isIP(reachable) ? reachable : '0.0.0.0'
  const fix = command ? withHost(command, apiHost).map(shellQuote).join(' ') : `muster serve … --host ${apiHost}`
  throw new MusterError(
    'not-configured',
    `Refusing to start: the enrollment listener is reachable from other machines (${reachable}) but the API listens on ${host} only, so nodes would enroll and then never reach it. Run: ${fix} (the API then serves HTTPS from the Platform CA). For nodes on this machine only, add --enrollment-address 127.0.0.1 instead; behind a proxy, give --public-url.`,
  )
}

/**
 * docs/security.md: a node is never told to send its credential over plain http to
 * another machine. Remote dispatch with a plain-http public URL off loopback
 * needs the operator to say a TLS-terminating proxy carries it.
 */
export function refuseInsecureNodeTraffic(o: PlatformOptions): void {
  const remote = Boolean(o.remoteDispatch || o.enrollmentPort !== undefined)
  if (!remote || !o.publicUrl || o.allowInsecureNodeTraffic) return
  let u: URL
  try {
    u = new URL(o.publicUrl)
  } catch {
    throw new MusterError('invalid-request', `--public-url ${o.publicUrl}: not a URL`)
  }
  if (u.protocol === 'https:' || isLoopback(u.hostname)) return
  throw new MusterError(
    'not-configured',
    `Refusing remote dispatch with the plain-http --public-url ${u.origin}: nodes would send their credentials unencrypted. Serve the API over HTTPS (bind --host to a non-loopback address for a certificate from the Platform CA, or give --tls-cert/--tls-key) with an https --public-url; or, behind a TLS-terminating proxy that forwards plain http on a private link, add --allow-insecure-node-traffic.`,
  )
}
