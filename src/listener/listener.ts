// The enrollment listener (SPEC §8): an HTTPS port that forwards exactly
// POST /api/v1/nodes/enroll and POST /api/v1/nodes/trust into the Platform's
// application and nothing else.
//
// Two parts, because Bun.serve has no connection limit (BUN-NOTES):
//   front  node:net on the public port; holds at most 64 connections open and
//          queues the next ones unread (they are never served while waiting);
//   inner  Bun.serve with the TLS certificate on a loopback port; its 64 KiB
//          body cap answers 413 from the headers, so an oversized body is
//          never read whole. (A unix socket here lost the 413 to a reset now
//          and then; loopback TCP did not in 300 tries. A local process could
//          reach the inner port directly: it serves the same two routes.)
import { connect, createServer, type Server as NetServer, type Socket } from 'node:net'
import type { Server } from 'bun'
import { bindHostFor, defaultAddresses, httpsUrl, normaliseAddresses } from '../addresses.ts'
import { MusterError } from '../errors.ts'
import type { EnrollmentEndpoint } from '../fabric/fabric.ts'
import { log } from '../log.ts'
import type { Platform } from '../platform.ts'
import { ensurePlatformTls, type PlatformTls } from './platform-tls.ts'

export const MAX_BODY_BYTES = 64 * 1024
export const MAX_CONNECTIONS = 64
/** Connections queued beyond the limit; more are closed at once. */
export const MAX_WAITING = 256
const WAIT_MS = 30_000
const RENEW_CHECK_MS = 12 * 3600_000
export const FORWARDED_ROUTES = new Set(['/api/v1/nodes/enroll', '/api/v1/nodes/trust'])

const json = (status: number, code: string, message: string) =>
  new Response(JSON.stringify({ error: { code, message } }), { status, headers: { 'content-type': 'application/json' } })

export class EnrollmentListener {
  /** Requests handed to the application (tests read these). */
  forwarded = 0
  /** Requests answered 404 without reaching the application. */
  refused = 0
  private tls!: PlatformTls
  private front: NetServer | undefined
  private inner: Server<unknown> | undefined
  private open = 0
  private readonly clients = new Set<Socket>()
  private readonly waiting: { socket: Socket; timer: ReturnType<typeof setTimeout> }[] = []
  private renewTimer: ReturnType<typeof setInterval> | undefined

  private constructor(
    private readonly platform: Platform,
    readonly addresses: string[],
    private readonly requestedPort: number,
    private readonly host: string,
  ) {}

  /** Connections accepted and held unserved while MAX_CONNECTIONS are open (tests read this). */
  get queued(): number {
    return this.waiting.length
  }

  /** Loads (or renews) the certificate; `listen` opens the port. */
  static async prepare(platform: Platform): Promise<EnrollmentListener> {
    const o = platform.options
    const given = normaliseAddresses(o.enrollmentAddresses ?? [], '--enrollment-address')
    const addresses = given.length > 0 ? given : defaultAddresses()
    const host = o.enrollmentHost ?? bindHostFor(addresses)
    const l = new EnrollmentListener(platform, addresses, o.enrollmentPort ?? 0, host)
    l.tls = await ensurePlatformTls(platform.dataDir, addresses, platform.now())
    platform.onClose(() => l.stop())
    return l
  }

  get fingerprint(): string {
    return this.tls.fingerprint
  }

  get port(): number {
    const a = this.front?.address()
    if (!a || typeof a === 'string') throw new Error('enrollment listener not listening')
    return a.port
  }

  get endpoint(): EnrollmentEndpoint {
    return { url: httpsUrl(this.addresses[0]!, this.port), addresses: [...this.addresses], port: this.port, fingerprint: this.tls.fingerprint }
  }

  async listen(): Promise<EnrollmentEndpoint> {
    this.startInner()
    const front = createServer({ pauseOnConnect: true }, (c) => this.admit(c))
    this.front = front
    await new Promise<void>((resolve, reject) => {
      front.once('error', (e: NodeJS.ErrnoException) =>
        reject(e.code === 'EADDRINUSE' ? new MusterError('already-running', `The enrollment port ${this.requestedPort} is already in use.`) : e),
      )
      front.listen(this.requestedPort, this.host, () => resolve())
    })
    front.on('error', (e) => log.warn(`enrollment listener: ${e.message}`))
    this.renewTimer = setInterval(() => void this.renewIfNeeded().catch((e) => log.warn(`enrollment listener renewal: ${(e as Error).message}`)), RENEW_CHECK_MS)
    this.renewTimer.unref?.()
    const ep = this.endpoint
    this.platform.fabric.enrollment = ep
    log.info(`enrollment listener on ${ep.url} (port ${ep.port}, addresses ${ep.addresses.join(', ')}) fingerprint ${ep.fingerprint}`)
    return ep
  }

  /** Replaces the certificate when it stopped fitting; new connections get the new one. */
  async renewIfNeeded(): Promise<boolean> {
    const next = await ensurePlatformTls(this.platform.dataDir, this.addresses, this.platform.now())
    if (!next.renewed) return false
    this.tls = next
    if (this.inner) {
      const old = this.inner
      this.startInner()
      void old.stop(false)
    }
    if (this.front) this.platform.fabric.enrollment = this.endpoint
    return true
  }

  async stop(): Promise<void> {
    if (this.renewTimer) clearInterval(this.renewTimer)
    for (const w of this.waiting.splice(0)) {
      clearTimeout(w.timer)
      w.socket.destroy()
    }
    const front = this.front
    this.front = undefined
    const closed = front ? new Promise<void>((resolve) => front.close(() => resolve())) : undefined
    await this.inner?.stop(true)
    this.inner = undefined
    for (const c of this.clients) c.destroy()
    await closed
    if (this.platform.fabric?.enrollment) this.platform.fabric.enrollment = null
  }

  // ---- inner: TLS and routing ----------------------------------------------

  private startInner(): void {
    this.inner = Bun.serve({
      hostname: '127.0.0.1',
      port: 0,
      reusePort: false,
      tls: { cert: this.tls.certPem, key: this.tls.keyPem },
      // Bun's own cap answers 413 with an empty body; keep it as a backstop far
      // above ours, so the JSON 413 below is what callers see.
      maxRequestBodySize: 16 * MAX_BODY_BYTES,
      fetch: (req) => this.route(req),
      error: () => json(500, 'internal', 'Internal error; see the Platform log.'),
    })
  }

  private async route(req: Request): Promise<Response> {
    const path = new URL(req.url).pathname
    if (req.method !== 'POST' || !FORWARDED_ROUTES.has(path)) {
      this.refused++
      return json(404, 'not-found', 'No such route.')
    }
    const tooLarge = () => json(413, 'payload-too-large', `Request bodies are limited to ${MAX_BODY_BYTES} bytes.`)
    // A declared length over the cap is refused before a byte of the body is read.
    if (Number(req.headers.get('content-length') ?? 0) > MAX_BODY_BYTES) return tooLarge()
    const body = await readCapped(req, MAX_BODY_BYTES)
    if (!body) return tooLarge()
    this.forwarded++
    // Only what these two anonymous routes need crosses: no cookies, no bearer tokens.
    const headers = new Headers({ accept: 'application/json', 'content-type': req.headers.get('content-type') ?? 'application/json' })
    return this.platform.app.handle(new Request(`http://enrollment-listener${path}`, { method: 'POST', headers, body }))
  }

  // ---- front: the connection limit -----------------------------------------

  private admit(client: Socket): void {
    client.on('error', () => {})
    if (this.open < MAX_CONNECTIONS) return this.serve(client)
    if (this.waiting.length >= MAX_WAITING) return void client.destroy()
    const entry = { socket: client, timer: setTimeout(() => client.destroy(), WAIT_MS) }
    this.waiting.push(entry)
    client.once('close', () => {
      clearTimeout(entry.timer)
      const i = this.waiting.indexOf(entry)
      if (i >= 0) this.waiting.splice(i, 1)
    })
  }

  private serve(client: Socket): void {
    this.open++
    this.clients.add(client)
    const upstream = connect(this.inner!.port!, '127.0.0.1')
    upstream.on('error', () => {}) // 'close' follows and ends the client
    client.once('close', () => {
      this.clients.delete(client)
      upstream.destroy()
      this.open--
      this.next()
    })
    upstream.once('close', () => client.destroy())
    client.pipe(upstream)
    upstream.pipe(client)
    client.resume()
  }

  private next(): void {
    while (this.open < MAX_CONNECTIONS && this.waiting.length > 0) {
      const w = this.waiting.shift()!
      clearTimeout(w.timer)
      if (!w.socket.destroyed) this.serve(w.socket)
    }
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
