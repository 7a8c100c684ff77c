import { afterEach, beforeAll, describe, expect, test } from 'bun:test'
import { connect as netConnect, createServer as createNetServer, type Server as NetServer, type Socket } from 'node:net'
import { createServer as createTlsServer } from 'node:tls'
import { MusterError } from '../../src/errors.ts'
import { PinMismatchError, clearPinCache, pinnedFetch, probeCertificate } from '../../src/crypto/pin.ts'
import { generateKeyAndCert, pemToDer, type KeyAndCert } from '../../src/crypto/x509.ts'

let main: KeyAndCert // covers 127.0.0.1 and ::1
let other: KeyAndCert // another key, same addresses
let elsewhere: KeyAndCert // does not cover 127.0.0.1

beforeAll(async () => {
  const addrs = { dnsNames: ['localhost'], ipAddresses: ['127.0.0.1', '::1'], days: 2 }
  main = await generateKeyAndCert({ commonName: 'main', ...addrs })
  other = await generateKeyAndCert({ commonName: 'other', ...addrs })
  elsewhere = await generateKeyAndCert({ commonName: 'elsewhere', dnsNames: ['elsewhere.example'], ipAddresses: ['10.9.9.9'], days: 2 })
})

// Everything a test starts is stopped after it, pass or fail.
const cleanups: (() => unknown)[] = []
afterEach(async () => {
  clearPinCache()
  for (const stop of cleanups.splice(0).reverse()) await stop()
})

/** An HTTPS server counting the requests its handler sees. */
function serve(kc: KeyAndCert, handler: (req: Request) => Response | Promise<Response> = () => new Response('ok'), hostname = '127.0.0.1') {
  const seen: string[] = []
  const server = Bun.serve({
    port: 0,
    hostname,
    tls: { cert: kc.certPem, key: kc.keyPem },
    fetch(req) {
      seen.push(`${req.method} ${new URL(req.url).pathname}`)
      return handler(req)
    },
  })
  cleanups.push(() => server.stop(true))
  return { port: server.port!, seen }
}

/** A TCP pass-through that sends connection n to ports[n] (the last port after that). */
function tcpSwitch(ports: number[]): Promise<{ port: number; connections: () => number }> {
  let count = 0
  const sockets = new Set<Socket>()
  const server: NetServer = createNetServer((client) => {
    const upstream = netConnect(ports[Math.min(count++, ports.length - 1)]!, '127.0.0.1')
    for (const s of [client, upstream]) {
      sockets.add(s)
      s.on('error', () => {})
      s.on('close', () => {
        client.destroy()
        upstream.destroy()
      })
    }
    client.pipe(upstream)
    upstream.pipe(client)
  })
  cleanups.push(
    () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy()
        server.close(() => resolve())
      }),
  )
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => {
      const addr = server.address()
      resolve({ port: typeof addr === 'object' && addr ? addr.port : 0, connections: () => count })
    }),
  )
}

describe('fingerprint pin', () => {
  test('the right pin gets the request through, body and all', async () => {
    const s = serve(main, async (req) => new Response(`got ${await req.text()}`))
    const res = await pinnedFetch(`https://127.0.0.1:${s.port}/api/v1/nodes/enroll`, { method: 'POST', body: 'hello' }, { fingerprint: main.fingerprint })
    expect(res.status).toBe(200)
    expect(await res.text()).toBe('got hello')
    expect(s.seen).toEqual(['POST /api/v1/nodes/enroll'])
  })

  test('a wrong pin rejects before the handler runs', async () => {
    const s = serve(main)
    const err = await pinnedFetch(`https://127.0.0.1:${s.port}/`, { method: 'POST', body: 'secret' }, { fingerprint: other.fingerprint }).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(PinMismatchError)
    expect((err as PinMismatchError).expected).toBe(other.fingerprint)
    expect((err as PinMismatchError).seen).toBe(main.fingerprint)
    expect(s.seen).toEqual([])
  })

  test('a wrong pin writes not one byte of application data', async () => {
    let received = 0
    const server = createTlsServer({ cert: main.certPem, key: main.keyPem }, (socket) => {
      socket.on('data', (chunk: Buffer) => (received += chunk.length))
      socket.on('error', () => {})
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    cleanups.push(() => new Promise((resolve) => server.close(resolve)))
    const sw = await tcpSwitch([(server.address() as { port: number }).port])
    const err = await pinnedFetch(`https://127.0.0.1:${sw.port}/`, { method: 'POST', body: 'secret' }, { fingerprint: other.fingerprint }).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(PinMismatchError)
    await Bun.sleep(50) // let any stray bytes arrive before counting
    expect(sw.connections()).toBe(1) // the probe's handshake, and no second connection
    expect(received).toBe(0)
  })

  test('a server that swaps certificates after the probe gets no request', async () => {
    const real = serve(main)
    const impostor = serve(other)
    const sw = await tcpSwitch([real.port, impostor.port]) // probe → real, request → impostor
    const err = await pinnedFetch(`https://127.0.0.1:${sw.port}/`, { method: 'POST', body: 'secret' }, { fingerprint: main.fingerprint }).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(Error)
    expect(sw.connections()).toBe(2)
    expect(impostor.seen).toEqual([])
    expect(real.seen).toEqual([])
    // the learned certificate was forgotten: the next call probes the impostor and names the mismatch
    const again = await pinnedFetch(`https://127.0.0.1:${sw.port}/`, {}, { fingerprint: main.fingerprint }).catch((e: unknown) => e)
    expect(again).toBeInstanceOf(PinMismatchError)
    expect(impostor.seen).toEqual([])
  })

  test('the learned certificate is reused: one probe per host, port and pin', async () => {
    const s = serve(main)
    const sw = await tcpSwitch([s.port])
    const url = `https://127.0.0.1:${sw.port}/`
    for (let i = 0; i < 3; i++) expect((await pinnedFetch(url, {}, { fingerprint: main.fingerprint })).status).toBe(200)
    expect(sw.connections()).toBe(4) // 1 probe + 3 requests
    expect(s.seen.length).toBe(3)
  })

  test('the pin holds even when the certificate does not name the address', async () => {
    const s = serve(elsewhere)
    const res = await pinnedFetch(`https://127.0.0.1:${s.port}/`, {}, { fingerprint: elsewhere.fingerprint.toUpperCase().replace('SHA256', 'sha256') })
    expect(res.status).toBe(200)
  })

  test('IPv6 literal URLs work', async () => {
    const s = serve(main, undefined, '::1')
    const res = await pinnedFetch(`https://[::1]:${s.port}/v6`, {}, { fingerprint: main.fingerprint })
    expect(res.status).toBe(200)
    expect(s.seen).toEqual(['GET /v6'])
  })

  test('a redirect is returned, not followed', async () => {
    const s = serve(main, () => new Response(null, { status: 302, headers: { location: '/elsewhere' } }))
    const res = await pinnedFetch(`https://127.0.0.1:${s.port}/start`, { redirect: 'follow' }, { fingerprint: main.fingerprint })
    expect(res.status).toBe(302)
    expect(res.headers.get('location')).toBe('/elsewhere')
    expect(s.seen).toEqual(['GET /start'])
  })

  test('probeCertificate returns the served certificate', async () => {
    const s = serve(main)
    const seen = await probeCertificate('127.0.0.1', s.port)
    expect(seen.fingerprint).toBe(main.fingerprint)
    expect(Buffer.from(pemToDer(seen.pem)).equals(Buffer.from(pemToDer(main.certPem)))).toBe(true)
    expect(s.seen).toEqual([])
  })
})

describe('CA pin', () => {
  test('the right CA verifies; a 302 still comes back as is', async () => {
    const s = serve(main, (req) =>
      new URL(req.url).pathname === '/go' ? new Response(null, { status: 302, headers: { location: '/' } }) : new Response('ok'),
    )
    expect(await (await pinnedFetch(`https://127.0.0.1:${s.port}/`, {}, { caPem: main.certPem })).text()).toBe('ok')
    expect((await pinnedFetch(`https://127.0.0.1:${s.port}/go`, {}, { caPem: main.certPem })).status).toBe(302)
    expect(s.seen).toEqual(['GET /', 'GET /go'])
  })

  test('another CA, or a certificate for other addresses, is refused', async () => {
    const s = serve(main)
    await expect(pinnedFetch(`https://127.0.0.1:${s.port}/`, {}, { caPem: other.certPem })).rejects.toThrow()
    const t = serve(elsewhere)
    await expect(pinnedFetch(`https://127.0.0.1:${t.port}/`, {}, { caPem: elsewhere.certPem })).rejects.toThrow()
    expect(s.seen).toEqual([])
    expect(t.seen).toEqual([])
  })
})

describe('input checks', () => {
  test('plain http and malformed pins are refused before any connection', async () => {
    const refusals = [
      pinnedFetch('http://127.0.0.1:1/', {}, { fingerprint: main.fingerprint }),
      pinnedFetch('https://127.0.0.1:1/', {}, { fingerprint: 'sha256:abc' }),
      pinnedFetch('https://127.0.0.1:1/', {}, { fingerprint: main.fingerprint.replace('sha256:', 'sha1:') }),
      pinnedFetch('https://127.0.0.1:1/', {}, { caPem: 'not a pem' }),
    ]
    for (const p of refusals) {
      const err = await p.catch((e: unknown) => e)
      expect(err).toBeInstanceOf(MusterError)
      expect((err as MusterError).code).toBe('invalid-request')
    }
  })
})
