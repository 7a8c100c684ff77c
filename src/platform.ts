// A Platform: its data directory, store, keys and services, and the HTTP
// server in front of them. `muster serve` and the tests both start one here.
import { readFileSync } from 'node:fs'
import { Auth } from './auth/auth.ts'
import { randomBytes } from './crypto/tokens.ts'
import { assertPrivate, DataDir } from './datadir.ts'
import { bindHostFor, defaultAddresses, isLoopback } from './addresses.ts'
import { MusterError } from './errors.ts'
import { startFederation } from './federation/service.ts'
import { createApp } from './http/app.ts'
import { log } from './log.ts'
import { acquireServeLock } from './serve-lock.ts'
import { openDb, type Db } from './store/db.ts'
import { Fabric } from './fabric/fabric.ts'
import { Projects } from './projects/service.ts'
import { startLocalNode } from './projects/local-node.ts'
import type { RateLimitOptions } from './fabric/rate-limit.ts'
import { ReadinessProber } from './fabric/probe.ts'
import { EnrollmentListener } from './listener/listener.ts'
import { FileVault, type Vault } from './vault.ts'
import { ApiServer, type ApiTls } from './http/api-server.ts'
import { Pki } from './pki/pki.ts'
import { ensureServerCert } from './pki/server-cert.ts'

export interface PlatformOptions {
  dataDir: string
  host?: string
  port?: number
  tlsCert?: string
  tlsKey?: string
  publicUrl?: string
  /** Allow remote dispatch with a plain-http public URL (a TLS-terminating proxy on a private link). */
  allowInsecureNodeTraffic?: boolean
  /** Milliseconds since the epoch; injectable so tests can move time. */
  clock?: () => number
  /** Hold platform/serve.lock (default true). */
  lock?: boolean
  enrollmentPort?: number
  enrollmentAddresses?: string[]
  /** Where the enrollment listener binds (default all IPv4 interfaces). */
  enrollmentHost?: string
  /** How often nodes with an address get a health probe (default 15 s, or $MUSTER_PROBE_INTERVAL_MS). */
  probeIntervalMs?: number
  remoteDispatch?: boolean
  localNode?: boolean
  nodeAuth?: 'legacy' | 'both' | 'enrolled'
  fleetTokenFile?: string
  /** A node without a heartbeat for this long is unreachable (default 45 s). */
  nodeStaleAfterMs?: number
  enrollLimit?: RateLimitOptions
  /** How long an unreachable node keeps its replicas before they move (default 60 s). */
  rescheduleGraceMs?: number
}

export const MASTER_KEY_FILE = 'platform/master.key'
const CERT_CHECK_MS = Number(process.env.MUSTER_CERT_CHECK_MS) > 0 ? Number(process.env.MUSTER_CERT_CHECK_MS) : 2_000
/** Every this many ticks the vault is read again (a CA replaced on purpose, another Platform's work). */
const CA_RELOAD_TICKS = 15

/**
 * SPEC §16.3: a node is never told to send its credential over plain http to
 * another machine. Remote dispatch with a plain-http public URL off loopback
 * needs the operator to say a TLS-terminating proxy carries it.
 */
function refuseInsecureNodeTraffic(o: PlatformOptions): void {
  const remote = Boolean(o.remoteDispatch || o.enrollmentPort !== undefined)
  if (!remote || !o.publicUrl || o.allowInsecureNodeTraffic) return
  let u: URL
  try {
    u = new URL(o.publicUrl)
  } catch {
    throw new MusterError('invalid-request', `--public-url ${o.publicUrl}: not a URL`)
  }
  if (u.protocol === 'https:' || isLoopback(u.hostname)) return
  throw new MusterError(
    'not-configured',
    `Refusing remote dispatch with the plain-http --public-url ${u.origin}: nodes would send their credentials unencrypted. Serve the API over HTTPS (bind --host to a non-loopback address for a certificate from the Platform CA, or give --tls-cert/--tls-key) with an https --public-url; or, behind a TLS-terminating proxy that forwards plain http on a private link, add --allow-insecure-node-traffic.`,
  )
}

export class Platform {
  readonly dataDir: DataDir
  readonly db: Db
  readonly auth: Auth
  readonly masterKey: Uint8Array
  /** The Platform's own secrets (CA, trust keys, listener TLS, federation key). */
  readonly vault: Vault
  readonly now: () => number
  /** The API serves HTTPS: --tls-cert, or a certificate from the Platform CA when it binds a non-loopback address. */
  readonly secure: boolean
  pki!: Pki
  fabric!: Fabric
  projects!: Projects
  listener: EnrollmentListener | undefined
  prober!: ReadinessProber
  private api: ApiServer | undefined
  /** When the API's certificate from the Platform CA is due for renewal (ms); Infinity when there is none. */
  private apiRenewAt = Infinity
  private apiRenewing: Promise<void> | undefined
  private readonly closers: (() => void | Promise<void>)[] = []

  private constructor(
    readonly options: PlatformOptions,
    parts: { dataDir: DataDir; db: Db; masterKey: Uint8Array },
  ) {
    this.dataDir = parts.dataDir
    this.db = parts.db
    this.masterKey = parts.masterKey
    this.vault = new FileVault(parts.dataDir)
    this.now = options.clock ?? Date.now
    this.secure = Boolean(options.tlsCert) || !isLoopback(options.host ?? '127.0.0.1')
    this.auth = new Auth(this.db, this.now)
  }

  /** Opens the data directory (lock, master key, store) and the services on it. */
  static async open(options: PlatformOptions): Promise<Platform> {
    refuseInsecureNodeTraffic(options)
    const dataDir = new DataDir(options.dataDir)
    dataDir.ensureDir('platform')
    const release = options.lock === false ? () => {} : acquireServeLock(dataDir)
    let p: Platform
    try {
      const masterKey = loadMasterKey(dataDir)
      const db = openDb(dataDir.path('muster.db'))
      p = new Platform(options, { dataDir, db, masterKey })
      p.closers.push(() => db.close(), release)
    } catch (e) {
      release()
      throw e
    }
    try {
      // Services check their configuration first, so a refused start leaves no account behind.
      await p.startServices()
      await p.auth.ensureSuperadmin(dataDir)
      return p
    } catch (e) {
      await p.close() // stops what did start, closes the store, releases the lock
      throw e
    }
  }

  /** Each area's service, started in order; each registers its own onClose. */
  private async startServices(): Promise<void> {
    // services: the Platform CA (the listener's and the API's certificates come from it)
    this.pki = await Pki.open(this.vault, this.now())
    // services: fabric (enrollment authority)
    this.fabric = Fabric.fromPlatform(this)
    await this.fabric.trust.sync()
    this.onClose(this.fabric.trust.start())
    this.prober = new ReadinessProber(this)
    this.prober.start()
    // services: listener (certificate now; the port opens in listen)
    if (this.options.enrollmentPort !== undefined) this.listener = await EnrollmentListener.prepare(this)
    // services: projects
    this.projects = new Projects(this.fabric, this.now, this.options.rescheduleGraceMs ?? 60_000)
    if (this.options.localNode) {
      const local = startLocalNode(this)
      this.projects.local = local
      const view = this.fabric.localNode
      this.fabric.localNode = () => ({ ...view(), capacity: local.capacity() })
      this.onClose(() => local.stop())
    }
    this.projects.start()
    this.onClose(() => this.projects.stop())
    // services: federation
    await startFederation(this)
    // services: cloud
    await import('./cloud/service.ts').then((m) => m.startCloud(this))
  }

  /** Registers something to stop when the Platform closes (run in reverse order). */
  onClose(fn: () => void | Promise<void>): void {
    this.closers.unshift(fn)
  }

  /** The HTTP application (built once); the enrollment listener forwards into it. */
  get app(): ReturnType<typeof createApp> {
    this.appInstance ??= createApp(this)
    return this.appInstance
  }
  private appInstance: ReturnType<typeof createApp> | undefined

  async listen(): Promise<string> {
    const app = this.app
    const api = new ApiServer({
      host: this.options.host ?? '127.0.0.1',
      port: this.options.port ?? 7380,
      fetch: (req) => {
        if (this.now() >= this.apiRenewAt) void this.renewApiCert()
        return app.handle(req)
      },
    })
    api.start(await this.apiTls())
    this.api = api
    const url = this.url
    log.info(`muster Platform listening on ${url}`)
    // listen: enrollment listener
    await this.listener?.listen()
    this.warnUnreachablePublicUrl()
    // listen: certificates are checked against the wall clock on a short tick (a clock may jump);
    // the API has no per-connection hook, and a certificate a jump left expired fails the handshake.
    let ticks = 0
    const tick = setInterval(() => void this.checkCertificates(++ticks % CA_RELOAD_TICKS === 0), CERT_CHECK_MS)
    tick.unref?.()
    this.onClose(() => clearInterval(tick))
    return url
  }

  /** The API's TLS: the operator's files, a certificate from the Platform CA off loopback, or none (loopback http). */
  private async apiTls(): Promise<ApiTls | undefined> {
    if (this.options.tlsKey) assertPrivate(this.options.tlsKey)
    if (this.options.tlsCert && this.options.tlsKey) return { cert: readFileSync(this.options.tlsCert, 'utf8'), key: readFileSync(this.options.tlsKey, 'utf8') }
    if (!this.secure) return undefined
    const c = await ensureServerCert(this.vault, this.pki.ca, 'api', this.apiAddresses(), this.now())
    this.apiRenewAt = c.renewAt
    return { cert: c.chainPem, key: c.keyPem }
  }

  /** The names the API's certificate covers: the public URL's host, the bound address (or this machine's), localhost, the listener's. */
  private apiAddresses(): string[] {
    const host = (this.options.host ?? '127.0.0.1').replace(/^\[(.*)\]$/, '$1')
    const wildcard = host === '0.0.0.0' || host === '::'
    const fromUrl = this.options.publicUrl ? [new URL(this.options.publicUrl).hostname.replace(/^\[(.*)\]$/, '$1')] : []
    return [...new Set([...fromUrl, ...(wildcard ? defaultAddresses() : [host]), 'localhost', ...(this.listener?.addresses ?? [])])]
  }

  private renewApiCert(): Promise<void> {
    this.apiRenewing ??= (async () => {
      try {
        if (!this.api || this.options.tlsCert || !this.secure) return
        const c = await ensureServerCert(this.vault, this.pki.ca, 'api', this.apiAddresses(), this.now())
        this.apiRenewAt = c.renewAt
        if (c.renewed) this.api.swap({ cert: c.chainPem, key: c.keyPem })
      } catch (e) {
        log.warn(`API certificate renewal: ${(e as Error).message}`)
      } finally {
        this.apiRenewing = undefined
      }
    })()
    return this.apiRenewing
  }

  /**
   * The short tick: renewals due by the wall clock (a comparison in memory);
   * with `reload`, also a CA changed in the vault (`admin ca promote`, another
   * Platform) and a full look at the listener's certificate.
   */
  async checkCertificates(reload = true): Promise<void> {
    try {
      const changed = reload && (await this.pki.reload())
      if (changed) this.apiRenewAt = 0
      if (reload || (this.listener && this.now() >= this.listener.certificate.renewAt)) await this.listener?.renewIfNeeded()
      if (this.now() >= this.apiRenewAt) await this.renewApiCert()
    } catch (e) {
      log.warn(`certificate check: ${(e as Error).message}`)
    }
  }

  /** Remote nodes send heartbeats to publicUrl: say so when it is loopback but the listener is not. */
  private warnUnreachablePublicUrl(): void {
    const remote = this.fabric.enrollment?.addresses.filter((a) => bindHostFor([a]) !== '127.0.0.1') ?? []
    if (this.options.publicUrl || remote.length === 0 || bindHostFor([new URL(this.url).hostname]) !== '127.0.0.1') return
    log.warn(`nodes on other machines will be told to reach the API at ${this.url}, which only this machine can reach: start serve with --host ${remote[0]} (the API then serves HTTPS from the Platform CA) or --public-url`)
  }

  get url(): string {
    if (!this.api) throw new Error('not listening')
    const host = this.api.hostname.includes(':') ? `[${this.api.hostname}]` : this.api.hostname
    return `${this.secure ? 'https' : 'http'}://${host}:${this.api.port}`
  }

  /** The Platform CA pin when the API serves a certificate from that CA (not the operator's --tls-cert); else null. */
  get apiCaPin(): string | null {
    return this.secure && !this.options.tlsCert ? this.pki.ca.pin : null
  }

  /** The URL nodes and operators are given: --public-url, else the API's own (a wildcard bind named by this machine's address). */
  get publicUrl(): string {
    if (this.options.publicUrl) return this.options.publicUrl.replace(/\/+$/, '')
    const h = this.api?.hostname
    if (h !== '0.0.0.0' && h !== '::') return this.url
    const addr = this.listener?.addresses.find((a) => !isLoopback(a)) ?? defaultAddresses()[0]!
    return `${this.secure ? 'https' : 'http'}://${addr.includes(':') ? `[${addr}]` : addr}:${this.api!.port}`
  }

  async close(): Promise<void> {
    await this.api?.stop()
    this.api = undefined
    for (const fn of this.closers.splice(0)) {
      try {
        await fn()
      } catch (e) {
        log.warn(`while stopping: ${(e as Error).message}`)
      }
    }
  }
}

/** platform/master.key: 32 random bytes, created on first start, 0600. */
export function loadMasterKey(dataDir: DataDir): Uint8Array {
  dataDir.createSecretExclusive(MASTER_KEY_FILE, randomBytes(32))
  const key = dataDir.readSecret(MASTER_KEY_FILE)
  if (!key || key.length !== 32) throw new MusterError('insecure-permissions', `${dataDir.path(MASTER_KEY_FILE)} is not 32 bytes; restore it from backup.`)
  return new Uint8Array(key)
}
