// A Platform: its data directory, store, keys and services, and the HTTP
// server in front of them. `muster serve` and the tests both start one here.
// This is the one place that composes the services; each service gets the
// Context (src/context.ts) and the siblings it uses, never the Platform.
import type { Server } from 'bun'
import { readFileSync } from 'node:fs'
import { Auth } from './auth/auth.ts'
import { Changes } from './changes.ts'
import type { Context } from './context.ts'
import { randomBytes } from './crypto/tokens.ts'
import { assertPrivate, DataDir } from './datadir.ts'
import { bindHostFor } from './addresses.ts'
import { MusterError } from './errors.ts'
import { startFederation, type Federation } from './federation/service.ts'
import { createApp } from './http/app.ts'
import { heartbeatRoutes } from './http/heartbeat.ts'
import { log } from './log.ts'
import type { PlatformOptions } from './options.ts'
import { rememberPeer } from './http/peer.ts'
import { acquireServeLock } from './serve-lock.ts'
import type { Services } from './services.ts'
import { openPlatformStore } from './store/open.ts'
import type { Store } from './store/db.ts'
import { Fabric } from './fabric/fabric.ts'
import { Projects } from './projects/service.ts'
import { startLocalNode } from './projects/local-node.ts'
import { ReadinessProber } from './fabric/probe.ts'
import { EnrollmentListener } from './listener/listener.ts'
import { startCloud, type Cloud } from './cloud/service.ts'
import { openVault, type Vault } from './vault.ts'

export type { PlatformOptions }

export const MASTER_KEY_FILE = 'platform/master.key'

export class Platform implements Services {
  readonly ctx: Context
  readonly dataDir: DataDir
  readonly store: Store
  readonly auth: Auth
  readonly masterKey: Uint8Array
  readonly vault: Vault
  readonly now: () => number
  readonly secure: boolean
  fabric!: Fabric
  projects!: Projects
  federation!: Federation
  cloud!: Cloud
  listener: EnrollmentListener | undefined
  prober!: ReadinessProber
  private server: Server<unknown> | undefined
  private readonly closers: (() => void | Promise<void>)[] = []

  private constructor(
    readonly options: PlatformOptions,
    parts: { dataDir: DataDir; store: Store; masterKey: Uint8Array; vault: Vault; changes: Changes },
  ) {
    this.dataDir = parts.dataDir
    this.store = parts.store
    this.masterKey = parts.masterKey
    this.vault = parts.vault
    this.now = options.clock ?? Date.now
    this.secure = Boolean(options.tlsCert)
    this.ctx = {
      store: parts.store,
      now: this.now,
      dataDir: parts.dataDir,
      vault: parts.vault,
      masterKey: parts.masterKey,
      changes: parts.changes,
      onClose: (fn) => this.onClose(fn),
    }
    this.auth = new Auth(this.ctx)
  }

  /** Opens the data directory (lock, master key, store) and the services on it. */
  static async open(options: PlatformOptions): Promise<Platform> {
    const dataDir = new DataDir(options.dataDir)
    dataDir.ensureDir('platform')
    const release = options.lock === false ? () => {} : acquireServeLock(dataDir)
    let p: Platform
    try {
      const masterKey = loadMasterKey(dataDir)
      const store = await openPlatformStore(dataDir, options.database)
      try {
        const vault = await openVault(store, dataDir, masterKey)
        const changes = new Changes(store)
        await changes.start()
        p = new Platform(options, { dataDir, store, masterKey, vault, changes })
        p.closers.push(() => changes.stop(), () => store.close())
      } catch (e) {
        await store.close()
        throw e
      }
      p.closers.push(release)
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
    const ctx = this.ctx
    // services: fabric (enrollment authority)
    this.fabric = await Fabric.open(ctx, this.options, () => this.publicUrl)
    this.prober = new ReadinessProber(ctx, this.fabric, this.options.probeIntervalMs)
    this.prober.start()
    // services: listener (certificate now; the port opens in listen)
    if (this.options.enrollmentPort !== undefined) this.listener = await EnrollmentListener.prepare(ctx, this.fabric, this.options, (req) => this.app.handle(req))
    // services: projects
    this.projects = await Projects.open(ctx, this.fabric, this.options.rescheduleGraceMs ?? 60_000)
    if (this.options.localNode) {
      const local = startLocalNode(ctx, this.fabric)
      this.projects.local = local
      const view = this.fabric.localNode
      this.fabric.localNode = () => ({ ...view(), capacity: local.capacity() })
      this.onClose(() => local.stop())
    }
    await this.projects.start()
    this.onClose(() => this.projects.stop())
    // services: federation
    this.federation = await startFederation(ctx, { auth: this.auth, projects: this.projects })
    // services: cloud
    this.cloud = startCloud(ctx, { fabric: this.fabric, projects: this.projects, publicUrl: () => this.publicUrl })
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
    if (this.options.tlsKey) assertPrivate(this.options.tlsKey)
    const tls = this.options.tlsCert && this.options.tlsKey ? { cert: readFileSync(this.options.tlsCert, 'utf8'), key: readFileSync(this.options.tlsKey, 'utf8') } : undefined
    const fetch = (req: Request, server: Server<unknown>) => {
      rememberPeer(req, () => server.requestIP(req)?.address)
      return app.handle(req)
    }
    try {
      this.server = Bun.serve({
        hostname: this.options.host ?? '127.0.0.1',
        port: this.options.port ?? 7380,
        reusePort: false,
        maxRequestBodySize: 1024 * 1024,
        idleTimeout: 120, // assignment long polls hold a request for up to a minute
        tls,
        // The heartbeat has its own route ahead of the framework (src/http/heartbeat.ts).
        routes: heartbeatRoutes(this, fetch),
        fetch,
        // Elysia maps every error itself; this is the last net, and a 5xx is a bug (SPEC §16.7).
        error: (e) => {
          log.error(`unhandled server error: ${e.stack ?? e.message}`)
          return Response.json({ error: { code: 'internal', message: 'Internal error; see the Platform log.' } }, { status: 500 })
        },
      })
    } catch (e) {
      const err = e as NodeJS.ErrnoException
      if (err.code === 'EADDRINUSE') throw new MusterError('already-running', `Port ${this.options.port} on ${this.options.host ?? '127.0.0.1'} is already in use.`)
      throw e
    }
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

  async close(): Promise<void> {
    await this.server?.stop(true)
    this.server = undefined
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
