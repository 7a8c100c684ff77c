// The API's listening endpoint (docs/security.md): where it binds, whether it is
// HTTPS and with which certificate (the operator's, one the Platform CA
// issues when it binds off loopback, or none on loopback), the URL nodes and
// operators are told, and the certificate's renewal by the wall clock.
import { SingleFlight } from '../single-flight.ts'
import { readFileSync } from 'node:fs'
import { defaultAddresses, isLoopback } from '../addresses.ts'
import { assertPrivate } from '../datadir.ts'
import { log } from '../log.ts'
import type { PlatformOptions } from '../context/options.ts'
import type { Pki } from '../pki/pki.ts'
import { ensureServerCert } from '../pki/server-cert.ts'
import type { Vault } from '../context/vault.ts'
import { ApiServer, type ApiHandler, type ApiRoutes, type ApiServerOptions, type ApiTls } from './api-server.ts'

export class ApiEndpoint {
  /** The API serves HTTPS: --tls-cert, or a certificate from the Platform CA when it binds a non-loopback address. */
  readonly secure: boolean
  private api: ApiServer | undefined
  /** When the API's certificate from the Platform CA is due for renewal (ms); Infinity when there is none. */
  private renewAt = Infinity
  private readonly renewing = new SingleFlight<void>()
  /** The certificate chain being served (a renewal stored but not yet served is served at the next check). */
  private served: string | undefined
  /** Off once the services stop (an engine swap's old side keeps the port open without a store). */
  private renewalsOn = true

  constructor(
    private readonly options: PlatformOptions,
    private readonly deps: { vault: Vault; pki: () => Pki; now: () => number; listenerAddresses: () => string[] },
  ) {
    this.secure = Boolean(options.tlsCert) || !isLoopback(options.host ?? '127.0.0.1')
  }

  /** `routes` are served ahead of `fetch` and get it for what they leave to it (the renewal check runs on the tick as well). */
  async start(fetch: ApiServerOptions['fetch'], error: ApiServerOptions['error'], routes?: (fallback: ApiHandler) => ApiRoutes): Promise<void> {
    const checked: ApiHandler = (req, server) => {
      if (this.deps.now() >= this.renewAt) void this.renew()
      return fetch(req, server)
    }
    const api = new ApiServer({
      host: this.options.host ?? '127.0.0.1',
      port: this.options.port ?? 7380,
      fetch: checked,
      error,
      ...(routes ? { routes: routes(checked) } : {}),
      takeover: this.options.takeover === true,
    })
    await api.listen(await this.tls())
    this.api = api
  }

  /** `force` (default): cut open connections; else in-flight requests finish (an engine swap's drain). */
  async stop(force = true): Promise<void> {
    const api = this.api
    this.api = undefined
    await api?.stop(force)
  }

  /** No more renewals (the store is closing); resolves when one under way has finished. */
  async stopRenewing(): Promise<void> {
    this.renewalsOn = false
    if (this.renewing.busy) await this.renewing.run(() => Promise.resolve())
  }

  /** The port the API listens on. */
  get port(): number | undefined {
    return this.api?.port
  }

  /** The API's TLS: the operator's files, a certificate from the Platform CA off loopback, or none (loopback http). */
  private async tls(): Promise<ApiTls | undefined> {
    if (this.options.tlsKey) assertPrivate(this.options.tlsKey)
    if (this.options.tlsCert && this.options.tlsKey) return { cert: readFileSync(this.options.tlsCert, 'utf8'), key: readFileSync(this.options.tlsKey, 'utf8') }
    if (!this.secure) return undefined
    const c = await ensureServerCert(this.deps.vault, this.deps.pki().ca, 'api', this.addresses(), this.deps.now())
    this.renewAt = c.renewAt
    this.served = c.chainPem
    return { cert: c.chainPem, key: c.keyPem }
  }

  /** The names the API's certificate covers: the public URL's host, the bound address (or this machine's), localhost, the listener's. */
  private addresses(): string[] {
    const host = (this.options.host ?? '127.0.0.1').replace(/^\[(.*)\]$/, '$1')
    const wildcard = host === '0.0.0.0' || host === '::'
    const fromUrl = this.options.publicUrl ? [new URL(this.options.publicUrl).hostname.replace(/^\[(.*)\]$/, '$1')] : []
    return [...new Set([...fromUrl, ...(wildcard ? defaultAddresses() : [host]), 'localhost', ...this.deps.listenerAddresses()])]
  }

  /** Renews the certificate from the Platform CA when due; `force` after the CA changed. */
  renew(force = false): Promise<void> {
    if (force) this.renewAt = 0
    if (!this.api || !this.renewalsOn || this.options.tlsCert || !this.secure || this.deps.now() < this.renewAt) return Promise.resolve()
    return this.renewing.run(() => this.renewNow())
  }

  private async renewNow(): Promise<void> {
    try {
      const c = await ensureServerCert(this.deps.vault, this.deps.pki().ca, 'api', this.addresses(), this.deps.now())
      if (c.chainPem !== this.served) {
        await this.api!.swap({ cert: c.chainPem, key: c.keyPem })
        this.served = c.chainPem
      }
      this.renewAt = c.renewAt
    } catch (e) {
      log.warn(`API certificate renewal: ${(e as Error).message}`)
    }
  }

  get url(): string {
    if (!this.api) throw new Error('not listening')
    const host = this.api.hostname.includes(':') ? `[${this.api.hostname}]` : this.api.hostname
    return `${this.secure ? 'https' : 'http'}://${host}:${this.api.port}`
  }

  get listening(): boolean {
    return this.api !== undefined
  }

  /** The Platform CA pin when the API serves a certificate from that CA (not the operator's --tls-cert); else null. */
  get caPin(): string | null {
    return this.secure && !this.options.tlsCert ? this.deps.pki().ca.pin : null
  }

  /** The URL nodes and operators are given: --public-url, else the API's own (a wildcard bind named by this machine's address). */
  get publicUrl(): string {
    if (this.options.publicUrl) return this.options.publicUrl.replace(/\/+$/, '')
    const h = this.api?.hostname
    if (h !== '0.0.0.0' && h !== '::') return this.url
    const addr = this.deps.listenerAddresses().find((a) => !isLoopback(a)) ?? defaultAddresses()[0]!
    return `${this.secure ? 'https' : 'http'}://${addr.includes(':') ? `[${addr}]` : addr}:${this.api!.port}`
  }
}
