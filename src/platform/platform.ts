// A Platform: its data directory, store, keys and services, and the HTTP
// server in front of them. `muster serve` and the tests both start one here.
// This is the one place that composes the services; each service gets the
// Context (src/context/context.ts) and the siblings it uses, never the Platform.
import { rekeyTokenDigests } from '../store/token-digests.ts'
import { sealPlainFields } from '../store/sealed-fields.ts'
import type { Server } from 'bun'
import { Auth } from '../auth/auth.ts'
import { startSso } from '../sso/start.ts'
import type { Sso } from '../sso/signin.ts'
import { Audit, DEFAULT_AUDIT_RETENTION } from '../audit/audit.ts'
import { auditHook } from '../http/audit-hook.ts'
import { Changes } from '../context/changes.ts'
import type { Context } from '../context/context.ts'
import { loadMasterKey } from '../context/master-key.ts'
import { DataDir } from '../datadir.ts'
import { refuseInsecureNodeTraffic, refuseUnreachableApi } from '../listener/plan.ts'
import { startFederation, type Federation } from '../federation/service.ts'
import { createApp } from '../http/app.ts'
import { gatedHeartbeatRoutes, hotPathStats } from '../http/heartbeat.ts'
import { countRequests } from '../http/request-metrics.ts'
import { watchMetrics } from './metrics.ts'
import { ApiEndpoint } from '../http/api-endpoint.ts'
import { log } from '../log.ts'
import type { PlatformOptions } from '../context/options.ts'
import { rememberPeer } from '../http/peer.ts'
import { acquireServeLock } from '../serve-lock.ts'
import type { Services } from '../http/services.ts'
import { openPlatformStore } from '../store/open.ts'
import type { Store } from '../store/db.ts'
import { Fabric } from '../fabric/fabric.ts'
import type { NodeAnchors } from '../wire/nodes.ts'
import { Projects } from '../projects/service.ts'
import { localNodeView, startLocalNode } from '../projects/local-node.ts'
import { LogRelay, type LocalLogs } from '../projects/logs.ts'
import { ReadinessProber } from '../fabric/probe.ts'
import { EnrollmentListener } from '../listener/listener.ts'
import { startCloud, type Cloud } from '../cloud/service.ts'
import { identityRoots } from '../cloud/identity/roots.ts'
import { Pki } from '../pki/pki.ts'
import { FieldSeal, openVault, type Vault } from '../context/vault.ts'
import { Leases } from '../context/leases.ts'
import { PlatformMetrics } from '../metrics/platform.ts'
import { PlatformRegistry } from '../ha/live-platforms.ts'
import { RequestGate } from '../swap/gate.ts'
import { tunableNumber } from '../tunables.ts'
import { sampleLoopLagIfAsked } from './loop-lag.ts'
import { Releases } from '../releases/service.ts'
import { Rollouts } from '../rollouts/service.ts'

export type { PlatformOptions }

export { loadMasterKey, MASTER_KEY_FILE } from '../context/master-key.ts'
/** The Platform CA's certificate (public), for --platform-ca-file. */
export const CA_CERT_FILE = 'platform/ca.pem'
const CERT_CHECK_MS = tunableNumber('MUSTER_CERT_CHECK_MS')
/** Every this many ticks the vault is read again (a CA replaced on purpose, another Platform's work). */
const CA_RELOAD_TICKS = 15

export class Platform implements Services {
  readonly ctx: Context
  readonly dataDir: DataDir
  readonly store: Store
  readonly auth: Auth
  readonly audit: Audit
  sso: Sso | null = null
  readonly masterKey: Uint8Array
  readonly vault: Vault
  readonly now: () => number
  readonly api: ApiEndpoint
  pki!: Pki
  fabric!: Fabric
  projects!: Projects
  logs!: LogRelay
  federation!: Federation
  cloud!: Cloud
  releases!: Releases
  rollouts!: Rollouts
  listener: EnrollmentListener | undefined
  prober!: ReadinessProber
  /** The Platforms sharing this store (several Platforms, docs/storage-ha.md). */
  platforms!: PlatformRegistry
  /** Every request to either port passes here; an engine swap holds and forwards them (src/swap/gate.ts). */
  readonly gate = new RequestGate()
  /** An engine swap stops these services: the local node's replicas keep running for the next engine to adopt. */
  swapping = false
  private readonly closers: (() => void | Promise<void>)[] = []

  private constructor(
    readonly options: PlatformOptions,
    parts: { dataDir: DataDir; store: Store; masterKey: Uint8Array; vault: Vault; changes: Changes; leases: Leases; metrics: PlatformMetrics },
  ) {
    this.dataDir = parts.dataDir
    this.store = parts.store
    this.masterKey = parts.masterKey
    this.vault = parts.vault
    this.now = options.clock ?? Date.now
    this.ctx = {
      store: parts.store,
      now: this.now,
      dataDir: parts.dataDir,
      vault: parts.vault,
      masterKey: parts.masterKey,
      changes: parts.changes,
      leases: parts.leases,
      metrics: parts.metrics,
      onClose: (fn) => this.onClose(fn),
    }
    this.auth = new Auth(this.ctx)
    this.audit = new Audit(parts.store, this.now, options.auditRetention ?? DEFAULT_AUDIT_RETENTION)
    this.api = new ApiEndpoint(options, { vault: parts.vault, pki: () => this.pki, now: this.now, listenerAddresses: () => this.listener?.addresses ?? [] })
  }

  /** Opens the data directory (lock, master key, store) and the services on it. */
  static async open(options: PlatformOptions): Promise<Platform> {
    refuseInsecureNodeTraffic(options)
    refuseUnreachableApi(options)
    const dataDir = new DataDir(options.dataDir)
    dataDir.ensureDir('platform')
    const release = options.lock === false ? () => {} : acquireServeLock(dataDir)
    let p: Platform
    try {
      const masterKey = loadMasterKey(dataDir)
      const store = await openPlatformStore(dataDir, options.database)
      // This Platform's metric families, in a registry of its own (src/metrics/platform.ts).
      const metrics = new PlatformMetrics()
      store.measure(metrics)
      try {
        const vault = await openVault(store, dataDir, masterKey)
        // Digests older versions wrote are keyed once, before any service looks a token up.
        await rekeyTokenDigests(store, masterKey, options.clock?.() ?? Date.now())
        // Env values an earlier version stored in plain text are sealed (docs/security.md).
        const fields = new FieldSeal(masterKey)
        await sealPlainFields(store, (table, row, column, text) => fields.seal(table, row, column, text))
        const changes = new Changes(store)
        await changes.start()
        const leases = new Leases(store, changes.origin, undefined, metrics)
        p = new Platform(options, { dataDir, store, masterKey, vault, changes, leases, metrics })
        // Leases are given up after the services stopped, so another Platform takes over at once.
        p.closers.push(() => leases.stop(), () => changes.stop(), () => store.close())
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
    // services: sign-in with the identity provider (discovery first: a bad issuer refuses the start)
    this.sso = await startSso(this.options.oidc, { auth: this.auth, audit: this.audit, publicUrl: () => this.publicUrl, now: this.now })
    // services: the Platform CA (the listener's and the API's certificates come from it)
    this.pki = await Pki.open(this.vault, this.now())
    this.publishCaCertificate()
    // services: fabric (enrollment authority)
    this.fabric = await Fabric.open(ctx, this.options, { pki: this.pki, nodeAnchors: () => this.nodeAnchors() })
    await this.fabric.trust.sync()
    this.onClose(this.fabric.trust.start())
    this.prober = new ReadinessProber(ctx, this.fabric, this.options.probeIntervalMs)
    this.prober.start()
    // services: listener (certificate now; the port opens in listen)
    if (this.options.enrollmentPort !== undefined) {
      this.listener = await EnrollmentListener.prepare(ctx, { fabric: this.fabric, pki: this.pki, forward: (req) => this.handle(req) }, this.options)
    }
    // services: projects
    this.projects = await Projects.open(ctx, this.fabric, this.options.rescheduleGraceMs ?? 60_000)
    let localLogs: LocalLogs | undefined
    if (this.options.localNode) {
      const local = await startLocalNode(ctx, this.fabric, { runAs: this.options.localRunAs })
      this.projects.local = local
      localLogs = local
      this.fabric.localNode = () => localNodeView(this.now(), local.capacity())
      this.onClose(() => (this.swapping ? local.release() : local.stop()))
    }
    this.logs = new LogRelay(ctx, this.fabric, this.projects, localLogs, this.options.logWaitMs)
    await this.logs.start()
    this.onClose(() => this.logs.stop())
    await this.projects.start()
    // The reconciliation under way finishes before the store closes (an engine swap: the next engine reconciles on that store).
    this.onClose(() => this.projects.stop())
    // services: federation
    this.federation = await startFederation(ctx, { auth: this.auth, projects: this.projects })
    // services: cloud
    this.cloud = startCloud(ctx, { fabric: this.fabric, projects: this.projects, publicUrl: () => this.publicUrl, apiCaPin: () => this.api.caPin }, identityRoots(this.options.cloudIdentityRoots))
    // services: releases and rollouts (docs/upgrading.md)
    this.releases = new Releases(ctx)
    await this.releases.start()
    this.rollouts = new Rollouts(ctx, { fabric: this.fabric, releases: this.releases, audit: this.audit })
    await this.rollouts.startLoops()
    // Every service has named its leases: take what is free, so each loop knows its holder.
    await ctx.leases.start()
  }

  /**
   * platform/ca.pem: the CA's certificate (public: its key stays sealed in the
   * store), for operators who pass it as --platform-ca-file.
   */
  private publishCaCertificate(): void {
    if (this.dataDir.readSecretText(CA_CERT_FILE) !== this.pki.ca.certPem) this.dataDir.writeSecret(CA_CERT_FILE, this.pki.ca.certPem)
  }

  /**
   * How a node authenticates this Platform from now on (enroll and trust
   * answers, which arrive over a connection its current pin authenticated):
   * the CA pin to keep, every pin to accept (a prepared CA replacement, the
   * listener's old certificate while it is served) and the API URL.
   */
  nodeAnchors(): NodeAnchors {
    const served = this.listener?.certificate
    return {
      caFingerprint: this.pki.ca.pin,
      pins: [...this.pki.caPins(), ...(served?.legacy ? [served.pin] : [])],
      platformUrl: this.publicUrl,
      ...(this.options.allowInsecureNodeTraffic ? { insecureNodeTraffic: true } : {}),
      // Only public halves: a node takes the first key and keys one it holds endorsed (docs/upgrading.md).
      ...(this.releases?.publicKeys().length ? { releaseKeys: this.releases.publicKeys() } : {}),
    }
  }

  /** Reads serve --nodes-file again; a bad file is logged and the running set kept (SIGHUP calls this). */
  reloadNodesFile(): ReturnType<Fabric['reloadNodesFile']> {
    return this.fabric.reloadNodesFile()
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

  /** The application behind the audit hook: every write is recorded before it runs (src/http/audit-hook.ts). */
  private get audited(): (r: Request) => Promise<Response> {
    const app = this.app
    this.auditedInstance ??= countRequests(this.ctx.metrics, auditHook(this, (r) => app.handle(r)))
    return this.auditedInstance
  }
  private auditedInstance: ((r: Request) => Promise<Response>) | undefined

  /** A request to this Platform, from either port: the application, or the next engine during a swap. */
  handle(req: Request): Promise<Response> {
    return Promise.resolve(this.gate.handle(req, (r) => this.audited(r)))
  }

  async listen(): Promise<string> {
    const local = this.audited
    const fetch = (req: Request, server: Server<unknown>) => {
      // Asked of the server only when a route needs the address (login throttling).
      rememberPeer(req, () => server.requestIP(req)?.address)
      return this.gate.handle(req, local)
    }
    await this.api.start(
      fetch,
      // Elysia maps every error itself; this is the last net, and a 5xx is a bug (docs/security.md).
      (e) => {
        log.error(`unhandled server error: ${e.stack ?? e.message}`)
        return Response.json({ error: { code: 'internal', message: 'Internal error; see the Platform log.' } }, { status: 500 })
      },
      // The heartbeat has its own route ahead of the framework, behind the request gate (src/http/heartbeat.ts).
      (fallback) => gatedHeartbeatRoutes(this, fallback, this.gate),
    )
    const url = this.url
    // The benchmarks' event-loop lag (docs/benchmarks.md), from the moment it serves.
    this.onClose(sampleLoopLagIfAsked(() => hotPathStats.fast))
    log.info(`muster Platform listening on ${url}`)
    // HTTPS from the Platform CA: how an operator on this machine reaches it (docs/operations.md).
    if (this.apiCaPin) log.info(`log in with: muster login --platform-url ${this.publicUrl} --platform-ca-file ${this.dataDir.path(CA_CERT_FILE)} --identifier superadmin`)
    // listen: enrollment listener
    await this.listener?.listen()
    // listen: record this Platform for the others and for nodes (`platforms` in answers)
    this.platforms = new PlatformRegistry(this.ctx, () => ({
      apiUrl: this.publicUrl,
      enrollmentUrl: this.fabric.enrollment?.url ?? null,
      fingerprint: this.fabric.enrollment?.fingerprint ?? null,
      localNode: Boolean(this.projects.local),
    }))
    this.fabric.platforms = () => this.platforms.nodeFacing()
    this.fabric.platformsView = () => this.platforms.view()
    await this.platforms.start()
    this.onClose(() => this.platforms.stop())
    // listen: the metrics' gauges read this Platform (GET /metrics)
    this.onClose(watchMetrics(this))
    // listen: certificates are checked against the wall clock on a short tick (a clock may jump);
    // the API has no per-connection hook, and a certificate a jump left expired fails the handshake.
    let ticks = 0
    const tick = setInterval(() => void this.checkCertificates(++ticks % CA_RELOAD_TICKS === 0), CERT_CHECK_MS)
    tick.unref?.()
    this.onClose(() => clearInterval(tick))
    return url
  }

  /**
   * The short tick: renewals due by the wall clock (a comparison in memory);
   * with `reload`, also a CA changed in the vault (`admin ca promote`, another
   * Platform) and a full look at the listener's certificate.
   */
  async checkCertificates(reload = true): Promise<void> {
    try {
      const changed = reload && (await this.pki.reload())
      if (changed) this.publishCaCertificate()
      if (reload || (this.listener && this.now() >= this.listener.certificate.renewAt)) await this.listener?.renewIfNeeded()
      await this.api.renew(changed)
    } catch (e) {
      log.warn(`certificate check: ${(e as Error).message}`)
    }
  }

  /** The API serves HTTPS: --tls-cert, or a certificate from the Platform CA when it binds a non-loopback address. */
  get secure(): boolean {
    return this.api.secure
  }

  get url(): string {
    return this.api.url
  }

  /** The Platform CA pin when the API serves a certificate from that CA (not the operator's --tls-cert); else null. */
  get apiCaPin(): string | null {
    return this.api.caPin
  }

  /** The URL nodes and operators are given: --public-url, else the API's own (a wildcard bind named by this machine's address). */
  get publicUrl(): string {
    return this.api.publicUrl
  }

  /** The API's port while it listens. */
  get apiPort(): number | undefined {
    return this.api.port
  }

  /** Stops the API port gracefully (engine swap, old side): in-flight requests finish, idle connections close. */
  async stopApi(): Promise<void> {
    await this.api.stop(false)
  }

  /** Stops everything: both ports, then the services. */
  async close(): Promise<void> {
    await this.api.stop()
    await this.listener?.stop()
    await this.stopServices()
  }

  /**
   * Stops every service (background loops, certificate checks, store, lock),
   * in reverse order; the ports stay open (an engine swap's old side holds and
   * forwards requests there meanwhile).
   */
  async stopServices(): Promise<void> {
    await this.api.stopRenewing()
    await this.listener?.stopRenewing()
    for (const fn of this.closers.splice(0)) {
      try {
        await fn()
      } catch (e) {
        log.warn(`while stopping: ${(e as Error).message}`)
      }
    }
  }
}
