// The API's HTTP server (SPEC §16.3). A renewed certificate is put in place by
// binding a new server on the same port right after the old one stops
// accepting (Bun.serve cannot swap its certificate); requests in flight finish
// on the old one. The gap is well under a millisecond.
import type { Server } from 'bun'
import { MusterError } from '../errors.ts'

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
}

export type ApiHandler = (req: Request, server: Server<unknown>) => Response | Promise<Response>
export type ApiRoutes = Record<string, Partial<Record<'GET' | 'POST' | 'PUT' | 'DELETE', ApiHandler>>>

export class ApiServer {
  private server: Server<unknown> | undefined

  constructor(private readonly options: ApiServerOptions) {}

  get port(): number {
    return this.server?.port ?? this.options.port
  }

  get hostname(): string {
    return this.server?.hostname ?? this.options.host
  }

  start(tls: ApiTls | undefined, port = this.options.port): void {
    try {
      this.server = Bun.serve({
        hostname: this.options.host,
        port,
        reusePort: false,
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
   * Serves a new certificate on the same port; open requests finish on the old
   * server. The old listening socket may take a moment to be released: the bind
   * is retried for up to two seconds, then the error goes to the caller (which
   * tries again later; the old server keeps its connections either way).
   */
  async swap(tls: ApiTls): Promise<void> {
    const old = this.server
    if (!old) return
    const port = old.port!
    void old.stop(false)
    for (let waited = 0; ; waited += 20) {
      try {
        return this.start(tls, port)
      } catch (e) {
        if (!(e instanceof MusterError && e.code === 'already-running') || waited >= 2000) {
          this.server = undefined
          throw e
        }
        await Bun.sleep(20)
      }
    }
  }

  async stop(): Promise<void> {
    await this.server?.stop(true)
    this.server = undefined
  }
}
