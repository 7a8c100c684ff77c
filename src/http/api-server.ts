// The API's HTTP server (docs/security.md). It listens with SO_REUSEPORT, so that
// the next engine of an engine swap can bind beside it (src/swap/engine.ts) and
// so that a renewed certificate (Bun.serve cannot swap its certificate) is put
// in place with no gap: a new server binds beside the old one, new connections
// are steered to it (src/sockets/steer.ts), the old one closes once nothing can
// wait in its accept queue, and requests in flight finish on it. A port
// another program holds is found by a plain bind first (src/sockets/ports.ts).
import type { Server } from 'bun'
import { MusterError } from '../errors.ts'
import { log } from '../log.ts'
import { assertPortFree } from '../sockets/ports.ts'
import { ownListenerFds, untilListenersDrained } from '../sockets/sockets.ts'
import { steerToNewest } from '../sockets/steer.ts'

export interface ApiTls {
  /** PEM: the certificate, then the CA. */
  cert: string
  key: string
}

export interface ApiServerOptions {
  host: string
  port: number
  fetch: (req: Request, server: Server<unknown>) => Response | Promise<Response>
  /** The last net behind the application's own error mapping. */
  error?: (e: Error) => Response
  /** Routes Bun's router serves ahead of `fetch` (the heartbeat: src/http/heartbeat.ts). */
  routes?: ApiRoutes
  /** An engine swap's new engine: the port is the old engine's; bind beside it and steer it here. */
  takeover?: boolean
}

export type ApiHandler = (req: Request, server: Server<unknown>) => Response | Promise<Response>
export type ApiRoutes = Record<string, Partial<Record<'GET' | 'POST' | 'PUT' | 'DELETE', ApiHandler>>>

/** How long a renewal waits for the old server's accept queue to empty before closing it anyway. */
const RENEWAL_DRAIN_MS = 75_000

export class ApiServer {
  private serving: Server<unknown> | undefined
  /** Read once per bind: Bun's server.port and .hostname ask the socket each time (a profile of enroll showed it). */
  private bound: { port: number; hostname: string } | undefined

  constructor(private readonly options: ApiServerOptions) {}

  private get server(): Server<unknown> | undefined {
    return this.serving
  }

  private set server(s: Server<unknown> | undefined) {
    this.serving = s
    this.bound = s ? { port: s.port ?? this.options.port, hostname: s.hostname ?? this.options.host } : undefined
  }

  get port(): number {
    return this.bound?.port ?? this.options.port
  }

  get hostname(): string {
    return this.bound?.hostname ?? this.options.host
  }

  /** Binds the port (first checking nobody holds it, unless taking it over from the previous engine). */
  async listen(tls: ApiTls | undefined): Promise<void> {
    const { host, port, takeover } = this.options
    if (!takeover && !(await assertPortFree(host, port))) throw new MusterError('already-running', `Port ${port} on ${host} is already in use.`)
    this.server = this.bind(tls, port)
    if (takeover) await steerToNewest(this.server.port!)
  }

  private bind(tls: ApiTls | undefined, port: number): Server<unknown> {
    try {
      return Bun.serve({
        hostname: this.options.host,
        port,
        reusePort: true,
        maxRequestBodySize: 1024 * 1024,
        idleTimeout: 120, // assignment long polls hold a request for up to a minute
        tls,
        ...(this.options.routes ? { routes: this.options.routes } : {}),
        fetch: this.options.fetch,
        ...(this.options.error ? { error: this.options.error } : {}),
      })
    } catch (e) {
      const err = e as NodeJS.ErrnoException
      if (err.code === 'EADDRINUSE') throw new MusterError('already-running', `Port ${port} on ${this.options.host} is already in use.`)
      throw e
    }
  }

  /**
   * Serves a new certificate on the same port without refusing a connection:
   * the new server binds beside the old one (SO_REUSEPORT) and new connections
   * are steered to it; the old one stops accepting once its accept queue is
   * empty, and its requests in flight finish there. A failed bind goes to the
   * caller (which tries again later) with the old server still serving.
   */
  async swap(tls: ApiTls): Promise<void> {
    const old = this.server
    if (!old) return
    const port = old.port!
    const oldFds = ownListenerFds(port)
    this.server = this.bind(tls, port)
    if ((await steerToNewest(port)) > 0 && !(await untilListenersDrained(port, RENEWAL_DRAIN_MS, oldFds))) {
      log.warn('API certificate renewal: the old server\'s accept queue did not empty in time; closing it anyway')
    }
    if (this.server === undefined) return void old.stop(true) // stopped meanwhile
    await old.stop(false)
  }

  /** `force`: cut the connections still open (a shutdown); else let them finish (an engine swap's drain). */
  async stop(force = true): Promise<void> {
    const server = this.server
    this.server = undefined
    await server?.stop(force)
  }
}
