// The enrollment listener's per-source share (docs/security.md): one source address
// gets at most 16 of the 64 connections while others wait; the 64 cap and the
// line of 256 still hold overall. The attack is performed for real: raw TCP
// connections from 127.0.0.x addresses against the real listener.
import { describe, expect, test } from 'bun:test'
import { connect, type Socket } from 'node:net'
import { connect as tlsConnect, type ConnectionOptions } from 'node:tls'
import { FairShare, sourceKey } from '../../src/listener/fair-share.ts'
import { MAX_CONNECTIONS, MAX_PER_SOURCE, MAX_WAITING } from '../../src/listener/listener.ts'
import { startListenerPlatform } from '../helpers/node-side.ts'
import { waitFor } from '../helpers/tmp.ts'

type ListenerPlatform = Awaited<ReturnType<typeof startListenerPlatform>>

/** Opens `n` idle TCP connections from `from` (they never send a byte: a slowloris). */
async function flood(p: ListenerPlatform, from: string, n: number): Promise<{ sockets: Socket[]; closed: () => number }> {
  let closed = 0
  const sockets = Array.from({ length: n }, () => {
    const s = connect({ host: '127.0.0.1', port: p.listener.port, localAddress: from })
    s.on('error', () => {})
    s.on('close', () => closed++)
    return s
  })
  await Promise.all(sockets.map((s) => new Promise<void>((resolve) => (s.readyState === 'open' ? resolve() : s.once('connect', () => resolve()).once('close', () => resolve())))))
  return { sockets, closed: () => closed }
}

/** One real TLS request from `from`; the status line, or the error. */
function trustFrom(p: ListenerPlatform, from: string, timeoutMs: number): Promise<string> {
  return new Promise((resolve) => {
    const s = tlsConnect({ host: '127.0.0.1', port: p.listener.port, localAddress: from, rejectUnauthorized: false } as ConnectionOptions)
    let reply = ''
    const t = setTimeout(() => {
      s.destroy()
      resolve(`no answer within ${timeoutMs} ms`)
    }, timeoutMs)
    s.on('secureConnect', () => s.write('POST /api/v1/nodes/trust HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n'))
    s.on('data', (d) => (reply += d.toString()))
    s.on('error', (e) => (reply ||= `error: ${e.message}`))
    s.on('close', () => {
      clearTimeout(t)
      resolve(reply.split('\r\n')[0] || reply || 'closed without an answer')
    })
  })
}

const destroyAll = (...groups: { sockets: Socket[] }[]) => {
  for (const g of groups) for (const s of g.sockets) s.destroy()
}

describe('enrollment listener: per-source share', () => {
  // Served connections that stay idle are closed by the TLS server after 10 s, so these tests check what
  // holds at every moment rather than counts that idle timeouts would change on a slow machine.
  test(`one address that opens all ${MAX_CONNECTIONS}+${MAX_WAITING} slots gets ${MAX_PER_SOURCE}; another address is served at once`, async () => {
    await using p = await startListenerPlatform()
    const attacker = await flood(p, '127.0.0.1', MAX_CONNECTIONS + MAX_WAITING)
    try {
      // The attacker holds its share, the rest of its connections wait or were turned away: it got no more.
      const beyondShare = MAX_CONNECTIONS + MAX_WAITING - MAX_PER_SOURCE
      await waitFor(() => p.listener.connections.openFrom('127.0.0.1') === MAX_PER_SOURCE && p.listener.connections.waiting + attacker.closed() >= beyondShare, { what: 'the attacker to take what it can' })
      expect(p.listener.connections.open).toBe(MAX_PER_SOURCE)
      expect(p.listener.connections.waiting).toBeLessThanOrEqual(MAX_WAITING) // so at least 48 were turned away
      // Another address, while the attacker's connections stay open: served promptly.
      const started = Date.now()
      expect(await trustFrom(p, '127.0.0.2', 5000)).toBe('HTTP/1.1 200 OK')
      expect(Date.now() - started).toBeLessThan(5000)
      expect(p.listener.connections.openFrom('127.0.0.1')).toBeLessThanOrEqual(MAX_PER_SOURCE)
    } finally {
      destroyAll(attacker)
    }
  })

  test(`the ${MAX_CONNECTIONS} cap still holds across addresses; a freed slot goes round the waiting addresses`, async () => {
    await using p = await startListenerPlatform()
    // Five addresses × 16: only 64 are served, the other 16 wait.
    const groups = []
    for (let i = 1; i <= 5; i++) groups.push(await flood(p, `127.0.0.${i}`, MAX_PER_SOURCE))
    try {
      await waitFor(() => p.listener.connections.open + p.listener.connections.waiting === 5 * MAX_PER_SOURCE, { what: '80 connections admitted' })
      expect(p.listener.connections.open).toBe(MAX_CONNECTIONS)
      expect(p.listener.connections.openFrom('127.0.0.5')).toBe(0)
      // A sixth address waits behind .5's sixteen; freed slots go to the address holding the fewest, so it
      // is served on the second, not the seventeenth.
      const newcomer = trustFrom(p, '127.0.0.6', 15_000)
      await waitFor(() => p.listener.connections.waiting === 5 * MAX_PER_SOURCE - MAX_CONNECTIONS + 1, { what: 'the newcomer in line' })
      for (const s of groups[0]!.sockets.slice(0, 2)) s.destroy()
      expect(await newcomer).toBe('HTTP/1.1 200 OK')
      // ...on those two slots, not on slots that idle timeouts freed later.
      expect(groups.reduce((n, g) => n + g.closed(), 0)).toBe(2)
      expect(p.listener.connections.open).toBeLessThanOrEqual(MAX_CONNECTIONS)
    } finally {
      destroyAll(...groups)
    }
  })
})

describe('FairShare', () => {
  test('a freed slot goes to the waiting source holding the fewest, never one at its share; a full line makes room', () => {
    const served: string[] = []
    const refused: string[] = []
    const share = new FairShare<string>({ total: 4, perSource: 2, waiting: 3 }, (x) => served.push(x), (x) => refused.push(x))
    for (const x of ['a1', 'a2', 'a3', 'b1', 'a4', 'b2', 'c1']) share.offer(x, x[0]!)
    // a1 a2 served; a3 waits (a at share); b1 served; a4 waits; b2 served (4 open); c1 waits: the line is a3 a4 c1.
    expect(served).toEqual(['a1', 'a2', 'b1', 'b2'])
    expect(share.waiting).toBe(3)
    share.release('b') // a is at its share: c1 goes before a3 and a4
    expect(served.at(-1)).toBe('c1')
    share.release('a')
    expect(served.at(-1)).toBe('a3')
    // A full line (a4 a5 a6): a newcomer from d pushes out the newest of the source with the most waiting
    share.offer('a5', 'a')
    share.offer('a6', 'a')
    expect(share.waiting).toBe(3)
    expect(refused).toEqual([])
    share.offer('d1', 'd')
    expect(refused).toEqual(['a6'])
    share.offer('e1', 'e') // a has 2 waiting, e none: a5 goes
    expect(refused).toEqual(['a6', 'a5'])
    share.offer('f1', 'f') // every source has at most 1 waiting: the newcomer is the one refused
    expect(refused).toEqual(['a6', 'a5', 'f1'])
  })

  test('a source is an IPv4 address or an IPv6 /64', () => {
    expect(sourceKey('127.0.0.2')).toBe('127.0.0.2')
    expect(sourceKey('::ffff:10.1.2.3')).toBe('10.1.2.3')
    expect(sourceKey('2001:db8:1:2:aaaa::1')).toBe(sourceKey('2001:db8:1:2::99'))
    expect(sourceKey('2001:db8:1:2::1')).not.toBe(sourceKey('2001:db8:1:3::1'))
    expect(sourceKey('::1')).toBe('0:0:0:0::/64')
  })
})
