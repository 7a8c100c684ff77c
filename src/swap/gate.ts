// The door every request to the Platform passes (API port and enrollment
// listener alike). Normally it hands the request to this engine's application
// and counts it. During an engine swap it first holds new requests (while the
// old engine stops its services and the new one loads the store) and then
// forwards them to the new engine over its handover socket, answering with
// `Connection: close` so the client's next request opens a connection the new
// engine accepts. A long poll (a `wait` parameter, as GET assignments takes)
// is forwarded without its wait: answered at once, the client polls again,
// on a new connection, at the new engine; the old one is not kept a minute.
// A request is never refused for a swap.
import { MusterError } from '../errors.ts'
import { log } from '../log.ts'
import { peerAddress } from '../http/peer.ts'

/** The client's address, from the old engine to the new one (honoured on the handover socket only: engine.ts). */
export const PEER_HEADER = 'x-muster-swap-peer'

type Handler<S = undefined> = (req: Request, server: S) => Promise<Response> | Response

const HOP_BY_HOP = ['connection', 'keep-alive', 'transfer-encoding', 'upgrade', 'proxy-connection', 'te', 'trailer']

export class RequestGate {
  private inFlight = 0
  private readonly idleWaiters = new Set<() => void>()
  private successor: string | undefined
  private held: Promise<string | null> | undefined
  private settle: ((socket: string | null) => void) | undefined

  /** `server` is passed on to `local` (a route's handler takes it; no closure per request). */
  handle<S = undefined>(req: Request, local: Handler<S>, server?: S): Promise<Response> | Response {
    if (this.successor) return forward(req, this.successor)
    if (this.held) return this.held.then((to) => (to ? forward(req, to) : unavailable()))
    // The hot path: one counter and one callback, no extra async frame.
    this.inFlight++
    let res: Promise<Response> | Response
    try {
      res = local(req, server as S)
    } catch (e) {
      this.done()
      throw e
    }
    if (res instanceof Promise) void res.then(this.done, this.done)
    else this.done()
    return res
  }

  private readonly done = (): void => {
    if (--this.inFlight === 0) for (const wake of this.idleWaiters) wake()
  }

  /**
   * The heartbeat's door, without handle's promise callback (measured ~110 ns a request): true when the
   * request goes in now, counted until the caller calls leave() once; false while a swap holds or forwards
   * requests (then handle, which never runs the application for it).
   */
  enter(): boolean {
    if (this.successor || this.held) return false
    this.inFlight++
    return true
  }

  readonly leave = this.done

  /** Requests from now on wait for `forwardTo` (or `abandon`). */
  hold(): void {
    this.held ??= new Promise((resolve) => (this.settle = resolve))
  }

  /** Resolves when no request is inside the application (true), or after `ms` (false). */
  async idle(ms: number): Promise<boolean> {
    if (this.inFlight === 0) return true
    return new Promise((resolve) => {
      const wake = () => {
        clearTimeout(t)
        this.idleWaiters.delete(wake)
        resolve(this.inFlight === 0)
      }
      const t = setTimeout(wake, ms)
      this.idleWaiters.add(wake)
    })
  }

  /** Held and future requests go to the engine listening on this unix socket. */
  forwardTo(socket: string): void {
    this.successor = socket
    this.settle?.(socket)
  }

  /** The swap failed for good: held requests are answered 503 (retryable). */
  abandon(): void {
    this.settle?.(null)
  }

  get forwarding(): boolean {
    return this.successor !== undefined
  }
}

function unavailable(): Response {
  const e = new MusterError('unavailable', 'The Platform is restarting; try again.')
  return new Response(JSON.stringify(e.toJSON()), { status: e.status, headers: { 'content-type': 'application/json', 'retry-after': '1', connection: 'close' } })
}

/** The same request (method, Host, headers, body) to the new engine; its answer as it came. */
async function forward(req: Request, socket: string): Promise<Response> {
  const u = new URL(req.url)
  u.searchParams.delete('wait')
  const headers = new Headers(req.headers)
  for (const h of HOP_BY_HOP) headers.delete(h)
  headers.set(PEER_HEADER, peerAddress(req)) // set, never passed on from the client (login throttling counts by address)
  try {
    const res = await fetch(`http://${u.host}${u.pathname}${u.search}`, {
      unix: socket,
      method: req.method,
      headers,
      body: req.method === 'GET' || req.method === 'HEAD' ? undefined : req.body,
      redirect: 'manual',
      decompress: false,
    } as RequestInit)
    const out = new Headers(res.headers)
    for (const h of HOP_BY_HOP) out.delete(h)
    out.set('connection', 'close')
    return new Response(res.body, { status: res.status, statusText: res.statusText, headers: out })
  } catch (e) {
    log.warn(`engine swap: forwarding ${req.method} ${u.pathname} to the new engine failed: ${(e as Error).message}`)
    return unavailable()
  }
}
