// The enrollment listener over real TLS on 127.0.0.1 (docs/nodes.md).
import { afterEach, describe, expect, test } from 'bun:test'
import { connect as netConnect } from 'node:net'
import { connect as tlsConnect, type ConnectionOptions, type TLSSocket } from 'node:tls'
import { clearPinCache, pinnedFetch, PinMismatchError } from '../../src/crypto/pin.ts'
import { createClient } from '../../src/client/index.ts'
import { VERSION } from '../../src/version.ts'
import { MAX_CONNECTIONS } from '../../src/listener/listener.ts'
import { newCert, withProof } from '../helpers/certs.ts'
import { startListenerPlatform } from '../helpers/node-side.ts'
import { waitFor } from '../helpers/tmp.ts'

afterEach(() => clearPinCache())

const post = (body: BodyInit | null, extra: Record<string, string> = {}) => ({ method: 'POST', body, headers: { 'content-type': 'application/json', ...extra } })

describe('enrollment listener', () => {
  test('enrolls over TLS with the right pin; publishes URL, addresses, port and fingerprint', async () => {
    await using p = await startListenerPlatform()
    const info = await p.client.nodes.platform()
    const ca = p.platform.pki.ca
    expect(info).toEqual({
      remoteDispatch: true,
      enrollment: { url: p.enrollUrl, addresses: ['127.0.0.1'], port: p.listener.port, fingerprint: ca.pin, caFingerprint: ca.pin },
      ca: { fingerprint: ca.pin, notAfter: ca.notAfter.toISOString() },
      warnings: [],
      platforms: [expect.objectContaining({ url: p.url, enrollmentUrl: p.enrollUrl, self: true, runs: expect.arrayContaining(['placement', 'probes']) })],
    })
    expect(p.fingerprint).toBe(ca.pin)
    expect(p.fingerprint).toMatch(/^sha256:[0-9a-f]{64}$/)
    const { token } = await p.client.nodes.createEnrollment({ nodeId: 'w1' })
    const node = createClient({ url: p.enrollUrl, fetch: (u, i) => pinnedFetch(u, i, { fingerprint: p.fingerprint }) })
    const cert = await newCert('w1')
    const r = await node.nodes.enroll(withProof({ token, nodeId: 'w1', certPem: cert.certPem, version: VERSION }, cert.keyPem))
    expect(r.credential).toMatch(/^mnc_w1\.1\./)
    expect(r.platformUrl).toBe(p.url)
    expect((await node.nodes.trust()).trustKeys).toHaveLength(1)
    expect(p.listener.forwarded).toBe(2)
    expect(p.appSeen).toEqual(['POST /api/v1/nodes/enroll', 'POST /api/v1/nodes/trust'])
  })

  test('a wrong pin sends nothing: no request reaches the listener and the token stays unspent', async () => {
    await using p = await startListenerPlatform()
    const { token } = await p.client.nodes.createEnrollment({ nodeId: 'w1' })
    const wrong = `sha256:${'ab'.repeat(32)}`
    const certPem = (await newCert('w1')).certPem
    const attempt = pinnedFetch(`${p.enrollUrl}/api/v1/nodes/enroll`, post(JSON.stringify({ token, nodeId: 'w1', certPem })), { fingerprint: wrong })
    await expect(attempt).rejects.toBeInstanceOf(PinMismatchError)
    await attempt.catch(() => {})
    expect(p.listener.forwarded + p.listener.refused).toBe(0)
    expect(p.appSeen).toEqual([])
    expect((await p.client.nodes.list()).pendingEnrollments.map((e) => e.nodeId)).toEqual(['w1'])
  })

  test('plain http to the listener port is not served: the connection is closed without an HTTP answer', async () => {
    await using p = await startListenerPlatform()
    // Raw bytes of a plain request: the listener hangs up, sending nothing an HTTP client could read.
    const reply = await new Promise<Buffer>((resolve, reject) => {
      const chunks: Buffer[] = []
      const s = netConnect(p.listener.port, '127.0.0.1', () => s.write('POST /api/v1/nodes/trust HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n'))
      s.on('data', (d: Buffer) => chunks.push(d))
      s.on('close', () => resolve(Buffer.concat(chunks)))
      s.on('error', () => {})
      s.setTimeout(15_000, () => reject(new Error('the listener kept a plain-http connection open')))
    })
    expect(reply.toString('latin1')).not.toContain('HTTP/')
    expect(reply.length === 0 || reply[0] === 0x15).toBe(true) // nothing, or a TLS alert record
    // And an HTTP client sees the connection fail, never a status.
    const viaFetch = await fetch(`http://127.0.0.1:${p.listener.port}/api/v1/nodes/trust`, { method: 'POST' }).then(
      (res) => `answered ${res.status}`,
      (e: { code?: string }) => `failed ${e.code}`,
    )
    expect(viaFetch).toBe('failed ECONNRESET')
    expect(p.listener.forwarded).toBe(0)
    expect(p.appSeen).toEqual([])
  })

  test('every other method and path is 404 without reaching the application', async () => {
    await using p = await startListenerPlatform()
    const pin = { fingerprint: p.fingerprint }
    const auth = { authorization: `Bearer ${p.token}` }
    const tries: [string, string][] = [
      ['GET', '/'], ['GET', '/healthz'], ['GET', '/api/v1/nodes'], ['GET', '/api/v1/nodes/platform'], ['GET', '/api/v1/nodes/enroll'],
      ['PUT', '/api/v1/nodes/enroll'], ['POST', '/api/v1/nodes/enroll/'], ['POST', '/api/v1/nodes/register'], ['POST', '/api/v1/nodes/renew'],
      ['POST', '/api/v1/nodes/enrollments'], ['POST', '/api/v1/join-tokens'], ['POST', '/login'], ['DELETE', '/api/v1/nodes/w1'], ['POST', '/API/V1/NODES/ENROLL'],
    ]
    for (const [method, path] of tries) {
      const r = await pinnedFetch(`${p.enrollUrl}${path}`, { method, headers: { ...auth, 'content-type': 'application/json' }, body: method === 'GET' ? undefined : '{"nodeId":"w1"}' }, pin)
      expect(`${method} ${path} ${r.status}`).toBe(`${method} ${path} 404`)
      expect(await r.json()).toEqual({ error: { code: 'not-found', message: 'No such route.' } })
    }
    expect(p.listener.refused).toBe(tries.length)
    expect(p.listener.forwarded).toBe(0)
    expect(p.appSeen).toEqual([])
    // the same operator token works on the API port, so the 404s are the listener's doing
    expect((await fetch(`${p.url}/api/v1/nodes`, { headers: auth })).status).toBe(200)
  })

  test('the bootstrap downloads are the only GETs it forwards, with nothing of the caller\'s request but the path', async () => {
    await using p = await startListenerPlatform()
    const pin = { fingerprint: p.fingerprint }
    const seenHeaders: string[][] = []
    const original = p.platform.app.handle.bind(p.platform.app)
    p.platform.app.handle = (req: Request) => {
      if (req.url.startsWith('http://enrollment-listener/bootstrap/')) seenHeaders.push([...req.headers.keys()])
      return original(req)
    }
    const get = (path: string, method = 'GET') => pinnedFetch(`${p.enrollUrl}${path}`, { method, headers: { authorization: `Bearer ${p.token}`, cookie: 'muster_session=x' } }, pin)
    const ca = await get('/bootstrap/ca.pem')
    expect(ca.status).toBe(200)
    expect(await ca.text()).toBe(p.platform.pki.ca.certPem)
    const install = await get('/bootstrap/install.sh')
    expect(install.status).toBe(200)
    expect(await install.text()).toStartWith('#!/bin/sh\n# install.sh')
    // From source there is no binary to serve: the application says so (the request was forwarded).
    for (const path of ['/bootstrap/bootstrap.sh', '/bootstrap/muster']) {
      const r = await get(path)
      expect(`${path} ${r.status}`).toBe(`${path} 404`)
      expect(((await r.json()) as { error: { message: string } }).error.message).toContain('runs from source')
    }
    expect(p.appSeen).toEqual(['GET /bootstrap/ca.pem', 'GET /bootstrap/install.sh', 'GET /bootstrap/bootstrap.sh', 'GET /bootstrap/muster'])
    expect(seenHeaders.flat().filter((h) => h === 'authorization' || h === 'cookie')).toEqual([])
    // Anything else under /bootstrap, or another method on these paths, never reaches the application.
    const before = p.listener.refused
    for (const [method, path] of [['POST', '/bootstrap/ca.pem'], ['DELETE', '/bootstrap/muster'], ['GET', '/bootstrap/'], ['GET', '/bootstrap/ca.pem/'], ['GET', '/bootstrap/x.sh'], ['GET', '/bootstrap']] as const) {
      const r = await get(path, method)
      expect(`${method} ${path} ${r.status}`).toBe(`${method} ${path} 404`)
    }
    expect(p.listener.refused - before).toBe(6)
    expect(p.appSeen).toHaveLength(4)
  })

  test('a body over 64 KiB is 413 and never reaches the application, declared or chunked', async () => {
    await using p = await startListenerPlatform()
    const pin = { fingerprint: p.fingerprint }
    const big = await pinnedFetch(`${p.enrollUrl}/api/v1/nodes/enroll`, post('x'.repeat(100_000)), pin)
    expect(big.status).toBe(413)
    expect(await big.json()).toMatchObject({ error: { code: 'payload-too-large' } })
    const chunks = new ReadableStream<Uint8Array>({
      start(c) {
        for (let i = 0; i < 10; i++) c.enqueue(new Uint8Array(10_000).fill(120))
        c.close()
      },
    })
    // Streamed without a length: refused once the cap is passed (413, or a reset while still sending).
    const chunked = await pinnedFetch(`${p.enrollUrl}/api/v1/nodes/trust`, post(chunks), pin).then(
      (r) => r.status,
      (e: { code?: string }) => e.code,
    )
    expect([413, 'ECONNRESET']).toContain(chunked!)
    expect(p.listener.forwarded).toBe(0)
    expect(p.appSeen).toEqual([])
    // just under the cap is forwarded (and refused by the application as invalid)
    const fits = await pinnedFetch(`${p.enrollUrl}/api/v1/nodes/enroll`, post(JSON.stringify({ token: 'x', nodeId: 'w1', certPem: 'y'.repeat(60_000) })), pin)
    expect(fits.status).toBe(400)
    expect(p.listener.forwarded).toBe(1)
  })

  test(`at most ${MAX_CONNECTIONS} connections at once: the next waits unserved until one closes`, async () => {
    await using p = await startListenerPlatform()
    const ca = p.platform.pki.ca.certPem
    // From 4 source addresses: one address gets at most MAX_PER_SOURCE of the slots (fair-share.test.ts).
    const open = (_?: unknown, i = 0): { socket: TLSSocket; ready: Promise<void>; secured: () => boolean } => {
      let done = false
      const socket = tlsConnect({ host: '127.0.0.1', port: p.listener.port, ca, localAddress: `127.0.0.${1 + (i % 4)}` } as ConnectionOptions)
      socket.on('error', () => {})
      const ready = new Promise<void>((resolve) => socket.once('secureConnect', () => resolve()))
      void ready.then(() => (done = true))
      return { socket, ready, secured: () => done }
    }
    const held = Array.from({ length: MAX_CONNECTIONS }, open)
    try {
      await Promise.all(held.map((h) => h.ready))
      const extra = open()
      try {
        // Accepted and held: it waits in the queue, and its handshake cannot finish while it does.
        await waitFor(() => p.listener.queued === 1, { what: 'the extra connection queued' })
        expect(extra.secured()).toBe(false)
        held.shift()!.socket.destroy() // a slot of the same source as `extra`
        await waitFor(() => extra.secured(), { what: 'the queued connection to be served' })
        extra.socket.write(`POST /api/v1/nodes/trust HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n`)
        let reply = ''
        extra.socket.on('data', (d) => (reply += d.toString()))
        await waitFor(() => reply.includes('trustKeys'), { what: 'an answer on the queued connection' })
        expect(reply.startsWith('HTTP/1.1 200')).toBe(true)
      } finally {
        extra.socket.destroy()
      }
    } finally {
      for (const h of held) h.socket.destroy()
    }
  })
})
