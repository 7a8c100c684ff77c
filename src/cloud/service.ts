// The cloud area on a Platform: provider connections (credentials proved by a
// list call, then sealed), regions and sizes, the provisioner and the
// autoscaler, and the status the dashboard shows.
// import-circle: a hub; the provisioner, first boot and autoscaler take the Cloud.
import { type Principal, principalName } from '../auth/auth.ts'
import { MusterError } from '../errors.ts'
import { log } from '../log.ts'
import type { Context } from '../context/context.ts'
import type { Fabric } from '../fabric/fabric.ts'
import type { Projects } from '../projects/service.ts'
import { deleteConnection, getConnection, listConnections, upsertConnection } from '../store/cloud-connections.ts'
import { existingMachines, listProvisions, STARTING_STATES } from '../store/cloud-provisions.ts'
import { getScaling, updateScaling } from '../store/cloud-scaling.ts'
import { actorFrom, audited, auditView } from './audit.ts'
import { Autoscaler } from './autoscale.ts'
import { CloudIdentity } from './identity/joins.ts'
import { builtinRoots, type IdentityRoots } from './identity/roots.ts'
import { binaryFromEnv, type BinarySource } from './binary.ts'
import { binaryArch, endpointsFromEnv, parseCredentials, type Arch, type CloudEndpoints, type CloudProvider, type Credentials, type ProviderContext } from './provider.ts'
import { createProvider } from './providers/index.ts'
import { Provisioner } from './provisioner.ts'
import { DEFAULT_RETRY, type RetryPolicy } from './retry.ts'
import { seal, sealKey, unseal } from './seal.ts'
import { type CloudAudit, type CloudConnection, type CloudDisconnected, type CloudStatus, type ProviderName, PROVIDERS, type RegionList, type SizeList } from '../wire/cloud.ts'
import { tunableNumber } from '../tunables.ts'

/** What the cloud area uses of its siblings. */
export interface CloudDeps {
  fabric: Fabric
  projects: Projects
  /** Where created machines download the binary from (the Platform API). */
  publicUrl: () => string
  /** The pin of the CA that issued the API's certificate, when the API is https from the Platform CA. */
  apiCaPin: () => string | null
}

/** Starts the cloud service of a Platform (called from Platform.startServices). */
export function startCloud(ctx: Context, deps: CloudDeps, roots: IdentityRoots = builtinRoots()): Cloud {
  const cloud = new Cloud(ctx, deps)
  // machines this Platform created join by what their cloud signs (src/cloud/identity)
  deps.fabric.identity = new CloudIdentity(cloud, roots)
  cloud.start()
  ctx.onClose(() => cloud.stop())
  return cloud
}

/** The cloud service of a Platform (tests reach it this way). */
export function cloudOf(p: { cloud: Cloud }): Cloud {
  return p.cloud
}

export const actorOf = (p: Principal | null): string => (p ? principalName(p) : 'autoscaler')

/** How long a provider's regions and sizes are answered from memory. */
const CATALOG_TTL_MS = 10 * 60_000

export class Cloud {
  /** API base URLs (MUSTER_CLOUD_*_URL); tests point them at fakes. */
  endpoints: CloudEndpoints
  /** An explicit binary download (MUSTER_CLOUD_BINARY_URL/SHA256); else the Platform serves its own. */
  binary: BinarySource | null
  /** The architecture of that binary: sizes and images follow it (MUSTER_CLOUD_BINARY_ARCH, else this Platform's). */
  arch: Arch
  /** How provider calls ride out throttling; tests shorten it. */
  retry: RetryPolicy = DEFAULT_RETRY
  readonly provisioner: Provisioner
  readonly autoscaler: Autoscaler
  private readonly key: Uint8Array
  private timers: ReturnType<typeof setInterval>[] = []

  constructor(
    readonly ctx: Context,
    readonly deps: CloudDeps,
  ) {
    this.endpoints = endpointsFromEnv()
    this.binary = binaryFromEnv()
    this.arch = binaryArch()
    this.key = sealKey(ctx.masterKey)
    this.provisioner = new Provisioner(this)
    this.autoscaler = new Autoscaler(this)
  }

  get db() {
    return this.ctx.store
  }
  now(): number {
    return this.ctx.now()
  }

  start(): void {
    const every = (ms: number, fn: () => Promise<unknown>) => {
      const t = setInterval(() => void fn().catch((e) => log.warn(`cloud: ${(e as Error).message}`)), ms)
      t.unref?.()
      this.timers.push(t)
    }
    // One Platform among those sharing the store runs each loop (src/context/leases.ts).
    const reconcile = this.ctx.leases.lease('cloud-reconcile')
    const autoscale = this.ctx.leases.lease('cloud-autoscale')
    every(tunableNumber('MUSTER_CLOUD_RECONCILE_MS'), () => reconcile.run(() => this.provisioner.reconcile()))
    every(tunableNumber('MUSTER_CLOUD_AUTOSCALE_MS'), () => autoscale.run(() => this.autoscaler.tick()))
  }

  async stop(): Promise<void> {
    for (const t of this.timers.splice(0)) clearInterval(t)
    await this.provisioner.idle()
  }

  // ---- connections -------------------------------------------------------------

  private context(): ProviderContext {
    return { endpoints: this.endpoints, retry: this.retry, arch: this.arch, env: process.env }
  }

  /** The client for a connected provider; refuses when it is not connected. */
  async provider(name: ProviderName): Promise<CloudProvider> {
    const row = await getConnection(this.db, name)
    if (!row) throw new MusterError('cloud-not-connected', `${name} is not connected: run \`muster cloud connect --provider ${name}\` first.`)
    const creds = JSON.parse(unseal(this.key, name, row.sealed)) as Credentials
    return createProvider(name, creds, this.context())
  }

  /** 1. parse  2. audit  3. prove by a list call  4. seal and keep. Nothing is stored when the provider refuses. */
  async connect(name: ProviderName, input: unknown, actor: Principal): Promise<CloudConnection> {
    const creds = parseCredentials(name, input)
    const form = 'roleArn' in creds ? 'role' : 'ambient' in creds ? 'ambient' : 'federatedTokenFile' in creds ? 'workload identity' : 'key'
    return audited(this.db, () => this.now(), actorFrom(actor), 'connect', { provider: name, detail: `credentials: ${form}` }, async () => {
      const { account } = await createProvider(name, creds, this.context()).validate()
      await upsertConnection(this.db, { provider: name, sealed: seal(this.key, name, JSON.stringify(creds)), account, connected_at: this.now(), connected_by: actorOf(actor) })
      this.dropCatalog(name)
      log.info(`cloud: ${name} connected by ${actorOf(actor)}${account ? ` (${account})` : ''}`)
      return await this.connectionView(name)
    }, (c) => `credentials: ${form}${c.account ? `; account ${c.account}` : ''}`)
  }

  /** Refused while machines it created exist: releasing them needs the credentials. Also withdraws scaling consent for it. */
  async disconnect(name: ProviderName, actor: Principal): Promise<CloudDisconnected> {
    if (!(await getConnection(this.db, name))) throw new MusterError('cloud-not-connected', `${name} is not connected.`)
    const machines = await existingMachines(this.db, name)
    if (machines.length > 0) {
      throw new MusterError('cloud-in-use', `${machines.length} machine(s) created through ${name} still exist (${machines.map((m) => m.id).join(', ')}); release them first (\`muster cloud release ID\`).`)
    }
    return audited(this.db, () => this.now(), actorFrom(actor), 'disconnect', { provider: name }, async () => {
      await deleteConnection(this.db, name)
      this.dropCatalog(name)
      if ((await getScaling(this.db)).provider === name) await updateScaling(this.db, { enabled: 0, updated_at: this.now() })
      log.info(`cloud: ${name} disconnected by ${actorOf(actor)}`)
      return { provider: name, connected: false as const }
    })
  }

  audit(limit?: number): Promise<CloudAudit> {
    return auditView(this.db, limit)
  }

  async connectionView(name: ProviderName): Promise<CloudConnection> {
    const row = (await listConnections(this.db)).find((c) => c.provider === name)
    return {
      provider: name,
      connected: Boolean(row),
      account: row?.account ?? null,
      connectedAt: row ? new Date(row.connected_at).toISOString() : null,
      connectedBy: row?.connected_by ?? null,
      machines: (await existingMachines(this.db, name)).length,
    }
  }

  /** Regions and sizes change rarely; a viewer asking in a loop must not turn into provider calls: each answer is kept a while. */
  private readonly catalog = new Map<string, { at: number; value: Promise<unknown> }>()

  private cached<T>(key: string, load: () => Promise<T>): Promise<T> {
    const hit = this.catalog.get(key)
    if (hit && performance.now() - hit.at < CATALOG_TTL_MS) return hit.value as Promise<T>
    const value = load()
    this.catalog.set(key, { at: performance.now(), value })
    // A failure is not kept: the next read asks again.
    value.catch(() => this.catalog.get(key)?.value === value && this.catalog.delete(key))
    return value
  }

  /** Another account's credentials may see other regions and sizes. */
  private dropCatalog(name: ProviderName): void {
    for (const key of this.catalog.keys()) if (key.startsWith(`${name} `)) this.catalog.delete(key)
  }

  async regions(name: ProviderName): Promise<RegionList> {
    return { provider: name, regions: await this.cached(`${name} regions`, async () => (await this.provider(name)).regions()) }
  }

  async sizes(name: ProviderName, region?: string): Promise<SizeList> {
    return { provider: name, region: region ?? null, sizes: await this.cached(`${name} sizes ${region ?? ''}`, async () => (await this.provider(name)).sizes(region)) }
  }

  /** Why provisioning cannot run here, or null when it can. */
  unavailableReason(): string | null {
    if (!this.deps.fabric.enrollment) return 'a created machine joins through the enrollment listener: start serve with --enrollment-port'
    if (!this.binary && !this.provisioner.ownBinary()) return 'no muster binary to install: run a compiled muster, or set MUSTER_CLOUD_BINARY_URL and MUSTER_CLOUD_BINARY_SHA256'
    return null
  }

  async status(): Promise<CloudStatus> {
    const rows = (await listProvisions(this.db)).filter((r) => r.state !== 'released')
    const why = this.unavailableReason()
    return {
      providers: await Promise.all(PROVIDERS.map((p) => this.connectionView(p))),
      provisioning: { available: why === null, ...(why ? { reason: why } : {}) },
      machines: {
        total: (await existingMachines(this.db)).length,
        starting: rows.filter((r) => STARTING_STATES.includes(r.state)).length,
        ready: rows.filter((r) => r.state === 'ready').length,
        failed: rows.filter((r) => r.state === 'failed').length,
      },
      scaling: await this.autoscaler.view(),
    }
  }
}
