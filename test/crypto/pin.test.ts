import { afterEach, beforeAll, describe, expect, test } from 'bun:test'
import { connect as netConnect, createServer as createNetServer, type Server as NetServer, type Socket } from 'node:net'
import { createServer as createTlsServer } from 'node:tls'
import { MusterError } from '../../src/errors.ts'
import { PinMismatchError, clearPinCache, pinnedFetch, probeCertificate } from '../../src/crypto/pin.ts'
import { generateCa, issueServerCert, spkiPin } from '../../src/crypto/ca.ts'
import { generateKeyAndCert, parseCertificate, pemToDer, type KeyAndCert } from '../../src/crypto/x509.ts'
import { waitFor } from '../helpers/tmp.ts'

let main: KeyAndCert // covers 127.0.0.1 and ::1
let other: KeyAndCert // another key, same addresses
let elsewhere: KeyAndCert // does not cover 127.0.0.1
let ca: KeyAndCert // a Platform CA
const local = { commonName: 'muster platform', dnsNames: ['localhost'], ipAddresses: ['127.0.0.1', '::1'], days: 2 }

beforeAll(async () => {
  const addrs = { dnsNames: ['localhost'], ipAddresses: ['127.0.0.1', '::1'], days: 2 }
  main = await generateKeyAndCert({ commonName: 'main', ...addrs })
  other = await generateKeyAndCert({ commonName: 'other', ...addrs })
  elsewhere = await generateKeyAndCert({ commonName: 'elsewhere', dnsNames: ['elsewhere.example'], ipAddresses: ['10.9.9.9'], days: 2 })
  ca = await generateCa()
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

/**
 * An HTTPS server sending a CA-issued leaf with its CA (`raw`: the PEM as given).
 * `get` may be async; `ready()` waits for the first certificate. `replace` and
 * `reload` restart it on the same port with another certificate.
 */
function serveChain(get: () => KeyAndCert | Promise<KeyAndCert>, handler: (req: Request) => Response | Promise<Response> = () => new Response('ok'), raw = false) {
  const seen: string[] = []
  let server: ReturnType<typeof Bun.serve> | undefined
  const start = (kc: KeyAndCert, port = 0) => {
    server = Bun.serve({
      port,
      hostname: '127.0.0.1',
      reusePort: false,
      tls: { cert: raw ? kc.certPem : kc.certPem + ca.certPem, key: kc.keyPem },
      fetch(req) {
        seen.push(`${req.method} ${new URL(req.url).pathname}`)
        return handler(req)
      },
    })
  }
  const first = get()
  if (!(first instanceof Promise)) start(first)
  const ready = first instanceof Promise ? first.then((kc) => start(kc)) : Promise.resolve()
  cleanups.push(() => server?.stop(true))
  const out = {
    seen,
    get port() {
      return server!.port!
    },
    async ready() {
      await ready
      return out
    },
    replace(kc: KeyAndCert) {
      const port = server!.port!
      void server!.stop(true)
      start(kc, port)
    },
    reload() {
      out.replace(get() as KeyAndCert)
    },
  }
  return out
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

describe('certificate pin (a listener from before the Platform CA)', () => {
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
    let closed = 0
    const server = createTlsServer({ cert: main.certPem, key: main.keyPem }, (socket) => {
      socket.on('data', (chunk: Buffer) => (received += chunk.length))
      socket.on('error', () => {})
    })
    // The raw TCP side: its 'close' comes after every byte it carried was handed on.
    server.on('connection', (raw: Socket) => raw.once('close', () => closed++))
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    cleanups.push(() => new Promise((resolve) => server.close(resolve)))
    const sw = await tcpSwitch([(server.address() as { port: number }).port])
    const err = await pinnedFetch(`https://127.0.0.1:${sw.port}/`, { method: 'POST', body: 'secret' }, { fingerprint: other.fingerprint }).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(PinMismatchError)
    // Count once the server has seen the probe's connection end: every byte it could get has arrived.
    await waitFor(() => closed === 1, { what: "the server to see the probe's connection close" })
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

describe('CA file', () => {
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

describe('the Platform CA pin (the SHA-256 of the CA key)', () => {
  test('a chain leading to the pinned CA gets the request through; the learned CA outlives a renewed leaf', async () => {
    const first = await issueServerCert(ca, local)
    const renewed = await issueServerCert(ca, local)
    let serving = first
    const s = serveChain(() => serving, async (req) => new Response(`got ${await req.text()}`))
    const sw = await tcpSwitch([s.port])
    const url = `https://127.0.0.1:${sw.port}/api/v1/nodes/trust`
    const res = await pinnedFetch(url, { method: 'POST', body: 'hello' }, { fingerprint: spkiPin(ca.certPem) })
    expect(await res.text()).toBe('got hello')
    serving = renewed
    s.reload()
    expect((await pinnedFetch(url, { method: 'POST', body: 'again' }, { fingerprint: spkiPin(ca.certPem) })).status).toBe(200)
    expect(sw.connections()).toBe(3) // one probe, two requests: the renewal needed no new probe
    expect(s.seen).toEqual(['POST /api/v1/nodes/trust', 'POST /api/v1/nodes/trust'])
  })

  test('a certificate from the pinned CA for another address is refused on the request connection, before a byte', async () => {
    const elsewhereLeaf = await issueServerCert(ca, { commonName: 'muster platform', dnsNames: ['elsewhere.example'], ipAddresses: ['10.9.9.9'], days: 2 })
    const real = serveChain(async () => issueServerCert(ca, local))
    const impostor = serveChain(() => elsewhereLeaf)
    // straight away: the chain is right, the name is not
    const direct = await pinnedFetch(`https://127.0.0.1:${impostor.port}/`, { method: 'POST', body: 'secret' }, { fingerprint: spkiPin(ca.certPem) }).catch((e: unknown) => e)
    expect(direct).toBeInstanceOf(Error)
    // after a good probe: only the second comparison (inside checkServerIdentity) stands in the way
    const sw = await tcpSwitch([(await real.ready()).port, impostor.port])
    const err = await pinnedFetch(`https://127.0.0.1:${sw.port}/`, { method: 'POST', body: 'secret' }, { fingerprint: spkiPin(ca.certPem) }).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(Error)
    expect(sw.connections()).toBe(2)
    expect(impostor.seen).toEqual([])
    expect(real.seen).toEqual([])
  })

  test('a chain leading to another CA with the same name is refused; so is the real CA sent behind a leaf it did not sign', async () => {
    const lookalike = await generateCa()
    expect(parseCertificate(lookalike.certPem).subjectDer).toEqual(parseCertificate(ca.certPem).subjectDer)
    const fakeLeaf = await issueServerCert(lookalike, local)
    // its own chain: the leaf, then the lookalike CA (same name as the pinned one, another key)
    const fake = serveChain(() => ({ ...fakeLeaf, certPem: fakeLeaf.certPem + lookalike.certPem }), undefined, true)
    const direct = await tcpSwitch([(await fake.ready()).port])
    const err = await pinnedFetch(`https://127.0.0.1:${direct.port}/`, { method: 'POST', body: 'secret' }, { fingerprint: spkiPin(ca.certPem) }).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(PinMismatchError)
    expect(direct.connections()).toBe(1) // refused at the probe: no connection ever carried the request
    expect(fake.seen).toEqual([])
    // the CA certificate is public: an attacker can send it after a leaf of its own
    const own = await issueServerCert(lookalike, local)
    const borrowed = serveChain(() => ({ ...own, certPem: own.certPem + ca.certPem }), undefined, true)
    const err2 = await pinnedFetch(`https://127.0.0.1:${borrowed.port}/`, { method: 'POST', body: 'secret' }, { fingerprint: spkiPin(ca.certPem) }).catch((e: unknown) => e)
    expect(err2).toBeInstanceOf(PinMismatchError)
    expect(borrowed.seen).toEqual([])
    // after a good probe, the lookalike chain fails the handshake itself
    const real = serveChain(async () => issueServerCert(ca, local))
    const sw = await tcpSwitch([(await real.ready()).port, (await fake.ready()).port])
    const err3 = await pinnedFetch(`https://127.0.0.1:${sw.port}/`, { method: 'POST', body: 'secret' }, { fingerprint: spkiPin(ca.certPem) }).catch((e: unknown) => e)
    expect(err3).toBeInstanceOf(Error)
    expect(fake.seen).toEqual([])
  })

  test('a certificate pin: one issued by the pinned certificate (it may sign) is still not the pinned one', async () => {
    // The listener certificates from before the CA are self-signed with keyCertSign, so they can act as a CA.
    const child = await issueServerCert(main, { commonName: 'main', dnsNames: ['localhost'], ipAddresses: ['127.0.0.1'], days: 2 })
    const real = serve(main)
    const impostor = serveChain(() => ({ ...child, certPem: child.certPem + main.certPem }), undefined, true)
    const sw = await tcpSwitch([real.port, impostor.port])
    const err = await pinnedFetch(`https://127.0.0.1:${sw.port}/`, { method: 'POST', body: 'secret' }, { fingerprint: main.fingerprint }).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(Error)
    expect(sw.connections()).toBe(2)
    expect(impostor.seen).toEqual([])
  })

  test('a server moving from its old certificate to the CA chain is followed: both pins held, no request fails', async () => {
    const s = serveChain(() => ({ ...main, certPem: main.certPem }), undefined, true)
    const pins = { fingerprint: [spkiPin(ca.certPem), main.fingerprint] }
    const sw = await tcpSwitch([s.port])
    const url = `https://127.0.0.1:${sw.port}/`
    expect((await pinnedFetch(url, {}, pins)).status).toBe(200)
    const leaf = await issueServerCert(ca, local)
    s.replace({ ...leaf, certPem: leaf.certPem + ca.certPem })
    expect((await pinnedFetch(url, {}, pins)).status).toBe(200)
    expect(s.seen).toEqual(['GET /', 'GET /'])
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
