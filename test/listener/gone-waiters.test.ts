// The enrollment listener's fair share forgets a source whose waiting
// connections closed (docs/nodes.md, the enrollment listener's connections): when the
// waiting line is full, a newcomer from a source with fewer waiting pushes out
// the newest connection of the source with the most. A source whose waiting
// connections all went away holds no place in that count, else newcomers are
// refused while nobody can be pushed out. Real sockets from 127.0.0.x against
// the listener of a real Platform, at its real limits.
import { describe, expect, test } from 'bun:test'
import { connect as netConnect, type Socket } from 'node:net'
import { connect as tlsConnect, type ConnectionOptions, type TLSSocket } from 'node:tls'
import { MAX_CONNECTIONS, MAX_PER_SOURCE, MAX_WAITING } from '../../src/listener/listener.ts'
import { startListenerPlatform, type ListenerPlatform } from '../helpers/node-side.ts'
import { waitFor } from '../helpers/tmp.ts'

interface Raw {
  socket: Socket
  /** The listener closed it (or it was destroyed here). */
  closed: () => boolean
}

/** A plain TCP connection from `from` that never sends a byte: it waits in line while every slot is taken. */
function raw(p: ListenerPlatform, from: string): Raw {
  let closed = false
  const socket = netConnect({ host: '127.0.0.1', port: p.listener.port, localAddress: from })
  socket.on('error', () => {})
  socket.on('close', () => (closed = true))
  socket.on('end', () => (closed = true))
  return { socket, closed: () => closed }
}

/** Every slot taken: MAX_PER_SOURCE TLS connections from each of 127.0.0.1 … 127.0.0.4. */
async function fill(p: ListenerPlatform): Promise<TLSSocket[]> {
  const sockets = Array.from({ length: MAX_CONNECTIONS }, (_, i) => {
    const s = tlsConnect({ host: '127.0.0.1', port: p.listener.port, ca: p.platform.pki.ca.certPem, localAddress: `127.0.0.${1 + Math.floor(i / MAX_PER_SOURCE)}` } as ConnectionOptions)
    s.on('error', () => {})
    return s
  })
  await Promise.all(sockets.map((s) => new Promise<void>((resolve) => s.once('secureConnect', () => resolve()))))
  expect(p.listener.connections.open).toBe(MAX_CONNECTIONS)
  return sockets
}

describe('enrollment listener: a source whose waiting connections closed', () => {
  test('no longer counts in the full line: a newcomer from a third source pushes out the newest of the source that fills it now', async () => {
    await using p = await startListenerPlatform()
    const served = await fill(p)
    const waiting: Raw[] = []
    try {
      // 127.0.0.5 fills the whole line, then every one of its waiting connections goes away (reset: a
      // client killed, a NAT that timed out). A waiting connection is never read, so a plain FIN is
      // noticed only when its wait ends (edges.test.ts covers that path).
      const gone = Array.from({ length: MAX_WAITING }, () => raw(p, '127.0.0.5'))
      waiting.push(...gone)
      await waitFor(() => p.listener.queued === MAX_WAITING, { what: 'the line full of 127.0.0.5', timeoutMs: 20_000 })
      for (const c of gone) c.socket.resetAndDestroy()
      await waitFor(() => p.listener.queued === 0, { what: 'the line empty again', timeoutMs: 20_000 })
      // 127.0.0.6 fills the line now.
      const flood = Array.from({ length: MAX_WAITING }, () => raw(p, '127.0.0.6'))
      waiting.push(...flood)
      await waitFor(() => p.listener.queued === MAX_WAITING, { what: 'the line full of 127.0.0.6', timeoutMs: 20_000 })
      expect(flood.some((c) => c.closed())).toBe(false)
      // A newcomer from 127.0.0.7 takes the place of 127.0.0.6's newest: it waits, that one is closed.
      const newcomer = raw(p, '127.0.0.7')
      waiting.push(newcomer)
      await waitFor(() => newcomer.closed() || flood.some((c) => c.closed()), { what: 'the listener making room or refusing', timeoutMs: 20_000 })
      expect({ newcomerRefused: newcomer.closed(), pushedOut: flood.findLastIndex((c) => c.closed()) }).toEqual({ newcomerRefused: false, pushedOut: MAX_WAITING - 1 })
      expect(p.listener.queued).toBe(MAX_WAITING)
    } finally {
      for (const c of waiting) c.socket.destroy()
      for (const s of served) s.destroy()
    }
    await waitFor(() => p.listener.connections.open === 0 && p.listener.queued === 0, { what: 'every slot and place back', timeoutMs: 20_000 })
  })
})
