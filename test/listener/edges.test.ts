// The enrollment listener at its edges, through real TLS on
// 127.0.0.x: what crosses into the application with an enroll or trust POST,
// the 64 KiB body cap on both sides of the limit, the waiting line when a
// waiting connection goes away, a freed slot never going to a source at its
// share, and the certificate a new connection gets right after the wall clock
// passed its renewal time.
import { describe, expect, test } from 'bun:test'
import { connect as netConnect, type Socket } from 'node:net'
import { connect as tlsConnect, type ConnectionOptions, type TLSSocket } from 'node:tls'
import { pinnedFetch } from '../../src/crypto/pin.ts'
import { MAX_BODY_BYTES, MAX_CONNECTIONS, MAX_PER_SOURCE } from '../../src/listener/listener.ts'
import { startListenerPlatform, type ListenerPlatform } from '../helpers/node-side.ts'
import { waitFor } from '../helpers/tmp.ts'

const SOURCES = MAX_CONNECTIONS / MAX_PER_SOURCE // 4 addresses fill every slot

/** A TLS connection from `from`; `secured` once its handshake finished (i.e. it was given a slot). */
function open(p: ListenerPlatform, from: string): { socket: TLSSocket; secured: () => boolean; ready: Promise<void> } {
  let done = false
  const socket = tlsConnect({ host: '127.0.0.1', port: p.listener.port, ca: p.platform.pki.ca.certPem, localAddress: from } as ConnectionOptions)
  socket.on('error', () => {})
  const ready = new Promise<void>((resolve) => socket.once('secureConnect', () => resolve()))
  void ready.then(() => (done = true))
  return { socket, secured: () => done, ready }
}

/** Every slot taken: MAX_PER_SOURCE TLS connections from each of 127.0.0.1 … 127.0.0.4. */
async function fill(p: ListenerPlatform) {
  const bySource = Array.from({ length: SOURCES }, (_, s) => Array.from({ length: MAX_PER_SOURCE }, () => open(p, `127.0.0.${s + 1}`)))
  await Promise.all(bySource.flat().map((c) => c.ready))
  expect(p.listener.connections.open).toBe(MAX_CONNECTIONS)
  return { bySource, close: () => bySource.flat().forEach((c) => c.socket.destroy()) }
}

/** The SHA-256 fingerprint of the certificate a new TLS connection is given (not verified: the clock under test may be far ahead). */
function servedFingerprint(p: ListenerPlatform): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = tlsConnect({ host: '127.0.0.1', port: p.listener.port, rejectUnauthorized: false }, () => {
      resolve(s.getPeerCertificate().fingerprint256)
      s.destroy()
    })
    s.on('error', reject)
  })
}

describe('enrollment listener edges', () => {
  test('an enroll or trust POST crosses with its body and content type only: no cookie, bearer token, forwarded or swap-peer header', async () => {
    await using p = await startListenerPlatform()
    const seen: Record<string, string>[] = []
    const original = p.platform.app.handle.bind(p.platform.app)
    p.platform.app.handle = (req: Request) => {
      if (req.url.startsWith('http://enrollment-listener/api/')) seen.push(Object.fromEntries(req.headers))
      return original(req)
    }
    const caller = {
      authorization: `Bearer ${p.token}`, // a superadmin API token: never a credential on the listener's forwards
      cookie: 'muster_session=stolen',
      'x-forwarded-for': '203.0.113.9',
      'x-muster-swap-peer': '203.0.113.9',
      'x-custom': 'kept-out',
      'content-type': 'application/json; charset=utf-8',
    }
    for (const path of ['/api/v1/nodes/enroll', '/api/v1/nodes/trust']) {
      const r = await pinnedFetch(`${p.enrollUrl}${path}`, { method: 'POST', headers: caller, body: '{"nodeId":"w1"}' }, { fingerprint: p.fingerprint })
      expect(r.status).toBeLessThan(500)
    }
    expect(seen).toHaveLength(2)
    for (const headers of seen) {
      // What the application received: what enroll and trust need, nothing of the caller's identity.
      expect(Object.keys(headers).filter((h) => !['accept', 'content-type', 'content-length'].includes(h))).toEqual([])
      expect(headers['content-type']).toBe('application/json; charset=utf-8')
    }
  })

  test(`a body of exactly ${MAX_BODY_BYTES} bytes is forwarded, one byte more is 413: declared and streamed`, async () => {
    await using p = await startListenerPlatform()
    const pin = { fingerprint: p.fingerprint }
    // A JSON body of an exact size (the application refuses it as invalid: it was forwarded).
    const body = (size: number) => JSON.stringify({ nodeId: 'w1', certPem: 'y'.repeat(size - JSON.stringify({ nodeId: 'w1', certPem: '' }).length) })
    const streamed = (text: string) =>
      new ReadableStream<Uint8Array>({
        start(c) {
          const bytes = new TextEncoder().encode(text)
          for (let at = 0; at < bytes.length; at += 10_000) c.enqueue(bytes.subarray(at, at + 10_000))
          c.close()
        },
      })
    const send = (b: BodyInit) => pinnedFetch(`${p.enrollUrl}/api/v1/nodes/enroll`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: b }, pin).then((r) => r.status, (e: { code?: string }) => e.code)
    expect(body(MAX_BODY_BYTES)).toHaveLength(MAX_BODY_BYTES)
    expect(await send(body(MAX_BODY_BYTES))).toBe(400)
    expect(p.listener.forwarded).toBe(1)
    expect(await send(body(MAX_BODY_BYTES + 1))).toBe(413)
    expect(p.listener.forwarded).toBe(1)
    expect(await send(streamed(body(MAX_BODY_BYTES)))).toBe(400)
    expect(p.listener.forwarded).toBe(2)
    expect([413, 'ECONNRESET']).toContain((await send(streamed(body(MAX_BODY_BYTES + 1))))!)
    expect(p.listener.forwarded).toBe(2)
  })

  test('a waiting connection dropped at the end of its wait leaves the line, and its slot is never lost', async () => {
    const saved = process.env.MUSTER_LISTENER_WAIT_MS
    process.env.MUSTER_LISTENER_WAIT_MS = '500'
    let p: ListenerPlatform
    try {
      p = await startListenerPlatform()
    } finally {
      if (saved === undefined) delete process.env.MUSTER_LISTENER_WAIT_MS
      else process.env.MUSTER_LISTENER_WAIT_MS = saved
    }
    await using _p = p
    const all = await fill(p)
    try {
      // Three connections wait (every slot is taken) and never send a byte; their wait ends.
      const idle: Socket[] = []
      for (let i = 0; i < 3; i++) {
        const s = netConnect({ host: '127.0.0.1', port: p.listener.port, localAddress: '127.0.0.5' })
        s.on('error', () => {})
        idle.push(s)
      }
      await waitFor(() => p.listener.queued === 3, { what: 'three connections waiting' })
      await waitFor(() => idle.every((s) => s.destroyed || s.readableEnded), { what: 'the Platform closing the waiting connections', timeoutMs: 10_000 })
      await waitFor(() => p.listener.queued === 0, { what: 'the line emptied', timeoutMs: 5_000 })
      // A slot freed now is free for whoever comes next: no closed connection took it.
      all.bySource[1]!.shift()!.socket.destroy()
      await waitFor(() => p.listener.connections.openFrom('127.0.0.2') === MAX_PER_SOURCE - 1, { what: 'the slot of 127.0.0.2 freed' })
      expect(p.listener.connections.open).toBe(MAX_CONNECTIONS - 1)
      const next = open(p, '127.0.0.5')
      await waitFor(() => next.secured(), { what: 'the next connection served at once', timeoutMs: 10_000 })
      next.socket.destroy()
    } finally {
      all.close()
    }
    await waitFor(() => p.listener.connections.open === 0, { what: 'every slot back' })
  })

  test('a freed slot never goes to a waiting source already at its share; one of its own freed does', async () => {
    await using p = await startListenerPlatform()
    const all = await fill(p)
    try {
      const more = open(p, '127.0.0.1') // its source holds MAX_PER_SOURCE already
      await waitFor(() => p.listener.queued === 1, { what: 'the 17th connection of 127.0.0.1 waiting' })
      all.bySource[1]!.shift()!.socket.destroy() // another source's slot frees
      await waitFor(() => p.listener.connections.openFrom('127.0.0.2') === MAX_PER_SOURCE - 1, { what: 'the slot of 127.0.0.2 freed' })
      // The free slot stays free: nobody else waits, and 127.0.0.1 is at its share.
      const freeSince = Date.now()
      await waitFor(() => Date.now() - freeSince > 300, { what: 'a moment' })
      expect(p.listener.connections.openFrom('127.0.0.1')).toBe(MAX_PER_SOURCE)
      expect(p.listener.connections.open).toBe(MAX_CONNECTIONS - 1)
      expect(p.listener.queued).toBe(1)
      expect(more.secured()).toBe(false)
      // One of 127.0.0.1's own connections ends: now it is under its share and gets a slot.
      all.bySource[0]!.shift()!.socket.destroy()
      await waitFor(() => more.secured(), { what: 'the waiting connection served' })
      expect(p.listener.connections.openFrom('127.0.0.1')).toBe(MAX_PER_SOURCE)
      more.socket.destroy()
    } finally {
      all.close()
    }
  })

  test('a new connection gets a renewed certificate from the moment the wall clock reaches its renewal time, not a moment before', async () => {
    let now = Date.now()
    await using p = await startListenerPlatform({ clock: () => now })
    const first = await servedFingerprint(p)
    // Each step jumps the clock (a VM resumed, an NTP step) and connects at once, before the Platform's own tick.
    for (let round = 0; round < 3; round++) {
      const before = await servedFingerprint(p)
      now = p.listener.certificate.renewAt - 1
      expect(await servedFingerprint(p)).toBe(before)
      now = p.listener.certificate.renewAt
      const after = await servedFingerprint(p)
      expect(after).not.toBe(before)
      expect(after).not.toBe(first)
    }
  })
})
