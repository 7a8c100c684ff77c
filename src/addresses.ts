// The addresses a machine is reached by, for certificates and published URLs:
// by default its first routable IPv4 and localhost (docs/nodes.md). Shared by the
// enrollment listener and the node side.
import { createServer, isIP } from 'node:net'
import { networkInterfaces } from 'node:os'
import { MusterError } from './errors.ts'

/** The first IPv4 address of a non-loopback, non-link-local interface, if any. */
export function firstRoutableIPv4(): string | undefined {
  for (const list of Object.values(networkInterfaces())) {
    for (const a of list ?? []) {
      if (a.family !== 'IPv4' || a.internal) continue
      if (a.address.startsWith('127.') || a.address.startsWith('169.254.') || a.address === '0.0.0.0') continue
      return a.address
    }
  }
  return undefined
}

export function defaultAddresses(): string[] {
  const ip = firstRoutableIPv4()
  return ip ? [ip, 'localhost'] : ['localhost']
}

const HOST = /^([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/

/** Checks each address is an IP literal or a DNS name; brackets stripped from IPv6. */
export function normaliseAddresses(addresses: string[], flag: string): string[] {
  const out: string[] = []
  for (const raw of addresses) {
    const a = raw.trim().replace(/^\[(.*)\]$/, '$1')
    if (!isIP(a) && !(HOST.test(a) && a.length <= 253)) throw new MusterError('invalid-request', `${flag} ${raw}: expected an IP address or a host name`)
    if (!out.includes(a)) out.push(a)
  }
  return out
}

/**
 * The certificate names for a list of addresses. `localhost` also covers the
 * loopback literals, since that is how a local client dials it.
 */
export function certNames(addresses: string[]): { dnsNames: string[]; ipAddresses: string[] } {
  const dnsNames: string[] = []
  const ipAddresses: string[] = []
  for (const a of addresses) {
    if (isIP(a)) ipAddresses.push(a)
    else dnsNames.push(a)
    if (a === 'localhost') ipAddresses.push('127.0.0.1', '::1')
  }
  return { dnsNames: [...new Set(dnsNames)], ipAddresses: [...new Set(ipAddresses)] }
}

/** `https://A:P` with IPv6 bracketed. */
export function httpsUrl(address: string, port: number): string {
  return `https://${isIP(address) === 6 ? `[${address}]` : address}:${port}`
}

/** A name or literal that always means this machine: localhost, 127.0.0.0/8, ::1 (brackets allowed). */
export function isLoopback(address: string): boolean {
  const a = address.replace(/^\[(.*)\]$/, '$1').toLowerCase()
  return a === 'localhost' || (isIP(a) === 4 && a.startsWith('127.')) || a === '::1'
}

/** Where to bind for these addresses: loopback only when every one of them is loopback, else every interface. */
export function bindHostFor(addresses: string[]): string {
  if (addresses.length > 0 && addresses.every(isLoopback)) return '127.0.0.1'
  return addresses.some((a) => isIP(a) === 6) ? '::' : '0.0.0.0'
}

/** A loopback port that was free a moment ago (for tests and the demo, which then bind it). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer()
    s.once('error', reject)
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port
      s.close(() => resolve(port))
    })
  })
}
