// A Platform: its data directory, store, keys and services, and the HTTP
// server in front of them. `muster serve` and the tests both start one here.
import type { Server } from 'bun'
import { readFileSync } from 'node:fs'
import { Auth } from './auth/auth.ts'
import { randomBytes } from './crypto/tokens.ts'
import { assertPrivate, DataDir } from './datadir.ts'
import { bindHostFor } from './addresses.ts'
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
import { RequestGate } from './swap/gate.ts'
import { assertPortFree } from './swap/ports.ts'
import { steerToNewest } from './swap/steer.ts'

export interface PlatformOptions {
  dataDir: string
  host?: string
  port?: number
  tlsCert?: string
  tlsKey?: string
  publicUrl?: string
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
  /** An engine swap: the ports are in use by the old engine, which drains once this one steers them here. */
  takeover?: boolean
}

export const MASTER_KEY_FILE = 'platform/master.key'

export class Platform {
  readonly dataDir: DataDir
  readonly db: Db
  readonly auth: Auth
  readonly masterKey: Uint8Array
  /** The Platform's own secrets (CA, trust keys, listener TLS, federation key). */
  readonly vault: Vault
  readonly now: () => number
  readonly secure: boolean
  fabric!: Fabric
  projects!: Projects
  listener: EnrollmentListener | undefined
  prober!: ReadinessProber
  /** Every request to either port passes here; an engine swap holds and forwards them. */
  readonly gate = new RequestGate()
  private server: Server<unknown> | undefined
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
    this.secure = Boolean(options.tlsCert)
    this.auth = new Auth(this.db, this.now)
  }

  /** Opens the data directory (lock, master key, store) and the services on it. */
  static async open(options: PlatformOptions): Promise<Platform> {
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
    // services: fabric (enrollment authority)
    this.fabric = Fabric.fromPlatform(this)
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

  /** A request to this Platform, from either port: the application, or the next engine during a swap. */
  handle(req: Request): Promise<Response> {
    return Promise.resolve(this.gate.handle(req, (r) => this.app.handle(r)))
  }

  async listen(): Promise<string> {
    const app = this.app
    if (this.options.tlsKey) assertPrivate(this.options.tlsKey)
    const tls = this.options.tlsCert && this.options.tlsKey ? { cert: readFileSync(this.options.tlsCert, 'utf8'), key: readFileSync(this.options.tlsKey, 'utf8') } : undefined
    const local = (r: Request) => app.handle(r)
    const hostname = this.options.host ?? '127.0.0.1'
    const port = this.options.port ?? 7380
    const inUse = () => new MusterError('already-running', `Port ${port} on ${hostname} is already in use.`)
    // SO_REUSEPORT lets the next engine bind beside this one (src/swap/engine.ts);
    // so a port another program holds is found by a plain bind first.
    if (!this.options.takeover && !(await assertPortFree(hostname, port))) throw inUse()
    try {
      this.server = Bun.serve({
        hostname,
        port,
        reusePort: true,
        maxRequestBodySize: 1024 * 1024,
        idleTimeout: 120, // assignment long polls hold a request for up to a minute
        tls,
        fetch: (req) => this.gate.handle(req, local),
      })
    } catch (e) {
      const err = e as NodeJS.ErrnoException
      if (err.code === 'EADDRINUSE') throw inUse()
      throw e
    }
    if (this.options.takeover) await steerToNewest(this.server.port!)
    const url = this.url
    log.info(`muster Platform listening on ${url}`)
    // listen: enrollment listener
    await this.listener?.listen()
    this.warnUnreachablePublicUrl()
    return url
  }

  /** Remote nodes send heartbeats to publicUrl: say so when it is loopback but the listener is not. */
  private warnUnreachablePublicUrl(): void {
    const remote = this.fabric.enrollment?.addresses.filter((a) => bindHostFor([a]) !== '127.0.0.1') ?? []
    if (this.options.publicUrl || remote.length === 0 || bindHostFor([new URL(this.url).hostname]) !== '127.0.0.1') return
    log.warn(`nodes on other machines will be told to reach the API at ${this.url}, which only this machine can reach: start serve with --public-url (e.g. http://${remote[0]}:${this.server?.port}) and --host to match`)
  }

  get url(): string {
    if (!this.server) throw new Error('not listening')
    const host = this.server.hostname?.includes(':') ? `[${this.server.hostname}]` : this.server.hostname
    return `${this.secure ? 'https' : 'http'}://${host}:${this.server.port}`
  }

  get publicUrl(): string {
    return this.options.publicUrl ?? this.url
  }

  get apiPort(): number | undefined {
    return this.server?.port
  }

  /** Stops the API port gracefully: in-flight requests finish, idle connections close. */
  async stopApi(): Promise<void> {
    await this.server?.stop(false)
    this.server = undefined
  }

  async close(): Promise<void> {
    await this.server?.stop(true)
    this.server = undefined
    await this.listener?.stop()
    await this.stopServices()
  }

  /** Stops every service (background loops, store, lock), in reverse order; the ports stay as they are. */
  async stopServices(): Promise<void> {
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
