// The enrollment listener (docs/nodes.md, docs/security.md): an HTTPS port, with a certificate
// from the Platform CA sent with its chain, that forwards exactly
// the routes of its allow-list (FORWARDED_ROUTES: enroll, trust, and the
// anonymous bootstrap downloads) into the Platform's application, nothing else.
//
// Two parts, because Bun.serve has no limit on open connections:
//   front  node:net on the public port; holds at most 64 connections open, at
//          most 16 from one source address (src/listener/fair-share.ts), and
//          queues the next ones unread (they are never served while waiting);
//   inner  Bun.serve with the TLS certificate on a loopback port; its 64 KiB
//          body cap answers 413 from the headers, so an oversized body is
//          never read whole. (A unix socket here lost the 413 to a reset now
//          and then; loopback TCP did not in 300 tries. A local process could
//          reach the inner port directly: it serves the same two routes.)
import { SingleFlight } from '../single-flight.ts'
import { connect, createServer, type Server as NetServer, type Socket } from 'node:net'
import type { Server } from 'bun'
import { httpsUrl } from '../addresses.ts'
import { MusterError } from '../errors.ts'
import type { EnrollmentEndpoint } from '../wire/nodes.ts'
import { log } from '../log.ts'
import type { Context } from '../context/context.ts'
import type { Fabric } from '../fabric/fabric.ts'
import type { PlatformOptions } from '../context/options.ts'
import type { Pki } from '../pki/pki.ts'
import { joinTokenAsBearer, malformedRequest, requestPath } from '../http/request.ts'
import { ensureServerCert, type ServerCert } from '../pki/server-cert.ts'
import { FairShare, sourceKey } from './fair-share.ts'
import { assertPortFree } from '../sockets/ports.ts'
import { steerToNewest } from '../sockets/steer.ts'
import { listenerPlan } from './plan.ts'
import { ownConnections, untilListenersDrained } from '../sockets/sockets.ts'
import { tunableNumber } from '../tunables.ts'

export const MAX_BODY_BYTES = 64 * 1024
export const MAX_CONNECTIONS = 64
/** Connections queued beyond the limit; more are closed at once. */
export const MAX_WAITING = 256
/** Of the MAX_CONNECTIONS, at most this many from one source address (docs/security.md). */
export const MAX_PER_SOURCE = 16
/** How long a connection may wait unserved before it is closed (MUSTER_LISTENER_WAIT_MS for tests). */
const waitMs = () => tunableNumber('MUSTER_LISTENER_WAIT_MS')
/**
 * The allow-list: exactly these reach the application, by method. Enroll and
 * trust for nodes; the four anonymous GETs a new machine bootstraps from
 * (src/http/routes/bootstrap.ts). Everything else is a 404 here.
 */
export const FORWARDED_ROUTES: ReadonlyMap<string, 'POST' | 'GET'> = new Map([
  ['/api/v1/nodes/enroll', 'POST'],
  ['/api/v1/nodes/identity-challenge', 'POST'],
  ['/api/v1/nodes/trust', 'POST'],
  ['/bootstrap/ca.pem', 'GET'],
  ['/bootstrap/bootstrap.sh', 'GET'],
  ['/bootstrap/install.sh', 'GET'],
  ['/bootstrap/muster', 'GET'],
])

const notHere = (host: string) => new MusterError('not-configured', `The enrollment listener cannot bind ${host}: no interface of this machine has that address. Give --enrollment-address an address of this machine (ip -brief address lists them).`)

const json = (status: number, code: string, message: string) =>
  new Response(JSON.stringify({ error: { code, message } }), { status, headers: { 'content-type': 'application/json' } })

export class EnrollmentListener {
  /** Requests handed to the application (tests read these). */
  forwarded = 0
  /** Requests answered 404 without reaching the application. */
  refused = 0
  private tls!: ServerCert
  private readonly renewing = new SingleFlight<boolean>()
  /** Off once the services stop (an engine swap's old side keeps the port open without a store). */
  private renewals = true
  /** One listening socket per bound address (src/listener/plan.ts), all on one port. */
  private fronts: NetServer[] = []
  private inner: Server<unknown> | undefined
  private readonly clients = new Set<Socket>()
  private readonly admitted = new Map<Socket, { key: string; served: boolean; timer: ReturnType<typeof setTimeout> }>()
  private readonly waitMs = waitMs()
  private readonly share = new FairShare<Socket>(
    { total: MAX_CONNECTIONS, perSource: MAX_PER_SOURCE, waiting: MAX_WAITING },
    (c) => this.serve(c),
    (c) => c.destroy(),
  )

  private constructor(
    private readonly ctx: Context,
    private readonly fabric: Fabric,
    private readonly pki: Pki,
    /** Hands a request to the Platform's application. */
    private readonly forward: (req: Request) => Response | Promise<Response>,
    readonly addresses: string[],
    private readonly requestedPort: number,
    /** Where the port is bound: the addresses themselves, or every interface (src/listener/plan.ts). */
    readonly binds: string[],
    /** An engine swap's new engine: the port is the old engine's; bind beside it and steer it here. */
    private readonly takeover: boolean,
  ) {}

  /** Connections accepted and held unserved while MAX_CONNECTIONS are open (tests read this). */
  get queued(): number {
    return this.share.waiting
  }

  /** Loads (or renews) the certificate; `listen` opens the port. */
  static async prepare(ctx: Context, deps: { fabric: Fabric; pki: Pki; forward: (req: Request) => Response | Promise<Response> }, o: PlatformOptions): Promise<EnrollmentListener> {
    const { addresses, binds } = listenerPlan(o)
    const l = new EnrollmentListener(ctx, deps.fabric, deps.pki, deps.forward, addresses, o.enrollmentPort ?? 0, binds, o.takeover === true)
    l.tls = await ensureServerCert(ctx.vault, deps.pki.ca, 'tls', addresses, ctx.now())
    // Not stopped by ctx.onClose: an engine swap stops the services with the port still open (Platform.close stops it).
    return l
  }

  /** The pin a joining node is given (the CA pin; the old certificate's fingerprint while it is still served). */
  get fingerprint(): string {
    return this.tls.pin
  }

  /** The certificate presented now (tests, doctor). */
  get certificate(): ServerCert {
    return this.tls
  }

  get port(): number {
    const a = this.fronts[0]?.address()
    if (!a || typeof a === 'string') throw new Error('enrollment listener not listening')
    return a.port
  }

  get endpoint(): EnrollmentEndpoint {
    return {
      url: httpsUrl(this.addresses[0]!, this.port),
      addresses: [...this.addresses],
      port: this.port,
      fingerprint: this.tls.pin,
      caFingerprint: this.pki.ca.pin,
    }
  }

  async listen(): Promise<EnrollmentEndpoint> {
    this.startInner()
    const inUse = (host: string) => new MusterError('already-running', `The enrollment port ${this.requestedPort} on ${host} is already in use.`)
    // SO_REUSEPORT so the next engine can bind beside this one during a swap; a plain bind first finds a port in use.
    const takeover = this.takeover
    if (!takeover) {
      for (const host of this.binds) {
        const free = await assertPortFree(host, this.requestedPort).catch((e: NodeJS.ErrnoException) => {
          throw e.code === 'EADDRNOTAVAIL' ? notHere(host) : e
        })
        if (!free) throw inUse(host)
      }
    }
    // The first bind picks the port (0: a free one); every other address binds that same port.
    for (const host of this.binds) {
      const front = createServer({ pauseOnConnect: true }, (c) => this.admit(c))
      const port = this.fronts.length > 0 ? this.port : this.requestedPort
      await new Promise<void>((resolve, reject) => {
        front.once('error', (e: NodeJS.ErrnoException) => reject(e.code === 'EADDRINUSE' ? inUse(host) : e.code === 'EADDRNOTAVAIL' ? notHere(host) : e))
        front.listen({ port, host, reusePort: true }, () => resolve())
      }).catch(async (e) => {
        await this.stop()
        throw e
      })
      front.on('error', (e) => log.warn(`enrollment listener: ${e.message}`))
      this.fronts.push(front)
    }
    if (takeover) await steerToNewest(this.port)
    const ep = this.endpoint
    this.fabric.enrollment = ep
    log.info(`enrollment listener on ${ep.url} (port ${ep.port}, addresses ${ep.addresses.join(', ')}; bound on ${this.binds.join(', ')}) fingerprint ${ep.fingerprint}`)
    return ep
  }

  /**
   * Replaces the certificate when it stopped fitting (the Platform calls this
   * on a short tick, and each connection checks the wall clock), so a clock
   * that jumped is noticed at once. New connections get the new certificate.
   */
  renewIfNeeded(): Promise<boolean> {
    if (!this.renewals) return Promise.resolve(false)
    return this.renewing.run(async () => {
      const next = await ensureServerCert(this.ctx.vault, this.pki.ca, 'tls', this.addresses, this.ctx.now())
      if (!next.renewed) {
        this.tls = next // the CA's pins may have changed (a prepared replacement)
        if (this.fronts.length > 0) this.fabric.enrollment = this.endpoint
        return false
      }
      this.tls = next
      if (this.inner) {
        const old = this.inner
        this.startInner()
        void old.stop(false)
      }
      if (this.fronts.length > 0) this.fabric.enrollment = this.endpoint
      return true
    })
  }

  /** No more renewals (the store is closing); resolves when one under way has finished. */
  async stopRenewing(): Promise<void> {
    this.renewals = false
    if (this.renewing.busy) await this.renewing.run(() => Promise.resolve(false))
  }

  /**
   * Engine swap, old side, after the new engine steered the port to itself:
   * closes the listening socket once that resets nothing (src/sockets/sockets.ts),
   * lets the connections it holds finish (their requests are forwarded to the
   * new engine, answered `Connection: close`), then stops. At most `deadlineMs`.
   */
  async drain(deadlineMs: number): Promise<void> {
    const fronts = this.fronts
    if (fronts.length === 0) return
    const until = Date.now() + deadlineMs
    const port = this.port
    if (!(await untilListenersDrained(port, deadlineMs))) log.warn('engine swap: the enrollment port did not drain in time; closing it anyway')
    for (const front of fronts) front.close() // the listening sockets only; the callback would wait for every connection
    while ((this.clients.size > 0 || this.share.waiting > 0 || ownConnections(port) > 0) && Date.now() < until) await Bun.sleep(250)
    log.debug(`engine swap: enrollment port drained (${this.clients.size} connection(s) left)`)
    this.fronts = []
    await this.stop()
  }

  async stop(): Promise<void> {
    for (const socket of this.share.drainLine()) socket.destroy()
    const fronts = this.fronts
    this.fronts = []
    const closed = fronts.map((front) => new Promise<void>((resolve) => front.close(() => resolve())))
    await this.inner?.stop(true)
    this.inner = undefined
    for (const c of this.clients) c.destroy()
    await Promise.all(closed)
    if (this.fabric.enrollment) this.fabric.enrollment = null
  }

  // ---- inner: TLS and routing ----------------------------------------------

  private startInner(): void {
    this.inner = Bun.serve({
      hostname: '127.0.0.1',
      port: 0,
      reusePort: false,
      tls: { cert: this.tls.chainPem, key: this.tls.keyPem },
      // Bun's own cap answers 413 with an empty body; keep it as a backstop far
      // above ours, so the JSON 413 below is what callers see.
      maxRequestBodySize: 16 * MAX_BODY_BYTES,
      fetch: (req) => this.route(req),
      error: (e) => {
        log.error(`enrollment listener: unhandled error: ${e.stack ?? e.message}`)
        return json(500, 'internal', 'Internal error; see the Platform log.')
      },
    })
  }

  private async route(req: Request): Promise<Response> {
    const path = requestPath(req)
    const malformed = malformedRequest(req)
    if (malformed) return json(malformed.status, malformed.code, malformed.message)
    const joinToken = joinTokenAsBearer(req)
    if (joinToken) return json(joinToken.status, joinToken.code, joinToken.message)
    const method = FORWARDED_ROUTES.get(path)
    if (!method || req.method !== method) {
      this.refused++
      return json(404, 'not-found', 'No such route.')
    }
    if (method === 'GET') {
      this.forwarded++
      // Nothing of the caller's request crosses but the path: no cookies, no bearer tokens, no body.
      return this.forward(new Request(`http://enrollment-listener${path}`, { method: 'GET' }))
    }
    const tooLarge = () => json(413, 'payload-too-large', `Request bodies are limited to ${MAX_BODY_BYTES} bytes.`)
    // A declared length over the cap is refused before a byte of the body is read.
    if (Number(req.headers.get('content-length') ?? 0) > MAX_BODY_BYTES) return tooLarge()
    const body = await readCapped(req, MAX_BODY_BYTES)
    if (!body) return tooLarge()
    this.forwarded++
    // Only what enroll and trust need crosses: no cookies, no bearer tokens.
    const headers = new Headers({ accept: 'application/json', 'content-type': req.headers.get('content-type') ?? 'application/json' })
    return this.forward(new Request(`http://enrollment-listener${path}`, { method: 'POST', headers, body }))
  }

  // ---- front: the connection limit and the per-source share ------------------

  /** Connections being served, and waiting, now (tests read these). */
  get connections(): { open: number; waiting: number; openFrom: (address: string) => number } {
    return { open: this.share.open, waiting: this.share.waiting, openFrom: (a) => this.share.openFrom(sourceKey(a)) }
  }

  private admit(client: Socket): void {
    client.on('error', () => {})
    // The wall clock says the certificate is due (a clock may have jumped): renew first, so this connection gets the new one.
    if (this.ctx.now() >= this.tls.renewAt && this.renewals) {
      void this.renewIfNeeded()
        .catch((e) => log.warn(`enrollment listener renewal: ${(e as Error).message}`))
        .finally(() => (client.destroyed ? undefined : this.queueOrShare(client)))
      return
    }
    this.queueOrShare(client)
  }

  /** Into the per-source share: served now, or queued unread until a slot is free. */
  private queueOrShare(client: Socket): void {
    const entry = { key: sourceKey(client.remoteAddress), served: false, timer: setTimeout(() => client.destroy(), this.waitMs) }
    this.admitted.set(client, entry)
    client.once('close', () => {
      clearTimeout(entry.timer)
      this.admitted.delete(client)
      if (entry.served) this.share.release(entry.key)
      else this.share.withdraw(client)
    })
    this.share.offer(client, entry.key)
  }

  private serve(client: Socket): void {
    const entry = this.admitted.get(client)
    if (entry) {
      entry.served = true
      clearTimeout(entry.timer)
    }
    if (client.destroyed || !this.inner) return void client.destroy()
    this.clients.add(client)
    const upstream = connect(this.inner.port!, '127.0.0.1')
    upstream.on('error', () => {}) // 'close' follows and ends the client
    client.once('close', () => {
      this.clients.delete(client)
      upstream.destroy()
    })
    // The inner server closed (Connection: close, idle): end the client after what was piped, not before.
    upstream.once('close', () => {
      client.end(() => client.destroy())
      setTimeout(() => client.destroy(), 5000).unref()
    })
    client.pipe(upstream)
    upstream.pipe(client)
    client.resume()
  }
}

/** The body, read chunk by chunk and abandoned as soon as it passes `cap`; null when it did (or broke off). */
async function readCapped(req: Request, cap: number): Promise<Uint8Array<ArrayBuffer> | null> {
  if (!req.body) return new Uint8Array(new ArrayBuffer(0))
  const chunks: Uint8Array[] = []
  let size = 0
  const reader = req.body.getReader()
  try {
    for (;;) {
      const { done, value } = await reader.read()
      if (done) break
      size += value.byteLength
      if (size > cap) {
        void reader.cancel().catch(() => {})
        return null
      }
      chunks.push(value)
    }
  } catch {
    return null
  }
  return new Uint8Array(Buffer.concat(chunks))
}
