// Provisioning: a machine at a provider that installs the worker role and
// joins this Platform by itself. Each request is recorded before the provider
// is called, and moves creating → booting → enrolling → ready, or failed (a
// refusal, the machine gone, or not ready within 20 minutes).
import { randomId } from '../crypto/tokens.ts'
import { MusterError } from '../errors.ts'
import { issueEnrollment } from '../fabric/join-tokens.ts'
import { log } from '../log.ts'
import { getProvision, insertProvision, listProvisions, liveProvisionByName, provisionsIn, STARTING_STATES, updateProvision, type ProvisionRow } from '../store/cloud-provisions.ts'
import { pendingEnrollments, revokePendingEnrollments } from '../store/join-tokens.ts'
import { isTombstoned } from '../store/nodes.ts'
import { BINARY_ROUTE, ownExecutable, ownExecutableSha256, type BinarySource } from './binary.ts'
import type { ProviderName } from './provider.ts'
import type { Cloud } from './service.ts'
import { firstBootData } from './user-data.ts'

export interface ProvisionInput {
  provider: ProviderName
  name: string
  region: string
  size: string
  role: 'general' | 'build'
}

const iso = (t: number | null) => (t === null ? null : new Date(t).toISOString())

/** A network failure, a 5xx or a 429 is worth another try; any other refusal is final. */
function retryable(e: unknown): boolean {
  if (!(e instanceof MusterError) || e.code !== 'cloud-provider-error') return false
  const status = e.detail?.providerStatus
  return typeof status !== 'number' || status >= 500 || status === 429
}

export class Provisioner {
  /** A provision not ready this long after it was requested has failed. */
  timeoutMs = Number(process.env.MUSTER_CLOUD_PROVISION_TIMEOUT_MS) || 20 * 60_000
  /** How long a provision request waits for the provider before answering with the state so far. */
  answerWithinMs = 20_000
  private readonly inFlight = new Map<string, Promise<void>>()
  private reconciling: Promise<void> | null = null

  constructor(private readonly cloud: Cloud) {}

  private get db() {
    return this.cloud.db
  }
  private get fabric() {
    return this.cloud.platform.fabric
  }

  ownBinary(): string | null {
    return ownExecutable()
  }

  private async binarySource(): Promise<BinarySource> {
    if (this.cloud.binary) return this.cloud.binary
    const exe = ownExecutable()
    if (!exe) throw new MusterError('cloud-unavailable', 'No muster binary to install on the machine: set MUSTER_CLOUD_BINARY_URL and MUSTER_CLOUD_BINARY_SHA256.')
    return { url: `${this.cloud.platform.publicUrl}${BINARY_ROUTE}`, sha256: await ownExecutableSha256(exe) }
  }

  /** Refuses what could never work, before anything is recorded or ordered. */
  check(input: ProvisionInput): void {
    const why = this.cloud.unavailableReason()
    if (why) throw new MusterError('cloud-unavailable', `Provisioning is not available: ${why}.`)
    this.cloud.provider(input.provider)
    const name = input.name
    if (name === 'local' || this.fabric.registry.get(name)) throw new MusterError('name-taken', `A node named ${name} is already registered.`)
    const live = liveProvisionByName(this.db, name)
    if (live) throw new MusterError('name-taken', `Provision ${live.id} already uses the name ${name}.`)
    if (pendingEnrollments(this.db, this.cloud.now(), name).length > 0) throw new MusterError('enrollment-pending', `${name} has an unused enrollment issued by an operator; pick another name or let it expire.`)
    const released = listProvisions(this.db).some((r) => r.name === name && r.state === 'released')
    if (isTombstoned(this.db, name) && !released) throw new MusterError('name-taken', `The name ${name} belonged to a removed node; pick another name.`)
  }

  /** Records a provision (state creating); false when its request id was recorded before. */
  record(input: ProvisionInput, origin: 'operator' | 'autoscale', actor: string, requestId?: string): ProvisionRow | null {
    const id = `prv-${randomId(12)}`
    try {
      const fresh = insertProvision(this.db, { id, request_id: requestId ?? id, provider: input.provider, name: input.name, region: input.region, size: input.size, role: input.role, origin, requested_by: actor, created_at: this.cloud.now() })
      return fresh ? getProvision(this.db, id) : null
    } catch (e) {
      if (/UNIQUE/.test((e as Error).message)) throw new MusterError('name-taken', `Another provision already uses the name ${input.name}.`)
      throw e
    }
  }

  async request(input: ProvisionInput, actor: string) {
    this.check(input)
    const row = this.record(input, 'operator', actor)!
    log.info(`cloud: ${row.id} requested by ${actor}: ${input.name} at ${input.provider} ${input.region} ${input.size}`)
    // Most creates answer in seconds; a slow one (Azure builds its network first) goes on in the background.
    let timer: ReturnType<typeof setTimeout> | undefined
    await Promise.race([this.create(row), new Promise((r) => (timer = setTimeout(r, this.answerWithinMs)))])
    clearTimeout(timer)
    return this.view(getProvision(this.db, row.id)!)
  }

  /** Creates (or adopts) the machine of a provision in state creating; one attempt at a time per provision. */
  create(row: ProvisionRow): Promise<void> {
    const running = this.inFlight.get(row.id)
    if (running) return running
    const p = this.attempt(row).finally(() => this.inFlight.delete(row.id))
    this.inFlight.set(row.id, p)
    return p
  }

  private async attempt(row: ProvisionRow): Promise<void> {
    const now = () => this.cloud.now()
    try {
      const provider = this.cloud.provider(row.provider as ProviderName)
      // 1. A machine an earlier attempt made with this request id is adopted: its token is still the valid one.
      let m = await provider.findMachine({ requestId: row.request_id, name: row.name, region: row.region })
      if (!m) {
        // 2. A single-use enrollment for the name (replacing one an interrupted attempt minted but never delivered).
        const binary = await this.binarySource()
        const ep = this.fabric.enrollment
        if (!ep) throw new MusterError('cloud-unavailable', 'The enrollment listener is not open.')
        const ttlMinutes = Math.ceil((row.created_at + this.timeoutMs - now()) / 60_000) + 10
        const { token } = issueEnrollment(this.fabric, row.name, Math.min(Math.max(ttlMinutes, 10), 1440), true)
        // 3. First-boot data: install the worker role, join pinned to the listener's certificate.
        // The binary served by this Platform's API over https from its own CA is verified with the CA pin.
        const binaryPin = !this.cloud.binary && binary.url.startsWith('https://') ? (this.cloud.platform.apiCaPin ?? undefined) : undefined
        const userData = firstBootData({ provider: row.provider, nodeId: row.name, token, enrollmentUrl: ep.url, fingerprint: ep.fingerprint, binaryUrl: binary.url, binarySha256: binary.sha256, binaryPin, role: row.role })
        if (userData.length > provider.maxUserDataBytes) throw new MusterError('cloud-unavailable', `The first-boot data (${userData.length} bytes) is over ${row.provider}'s limit of ${provider.maxUserDataBytes}.`)
        // 4. The machine, idempotent on the request id.
        m = await provider.createMachine({ name: row.name, region: row.region, size: row.size, userData, requestId: row.request_id, role: row.role })
      }
      const state = m.status === 'running' ? 'enrolling' : 'booting'
      updateProvision(this.db, row.id, { state, machine_id: m.id, machine_status: m.providerStatus, address: m.address, reason: null, updated_at: now() }, ['creating'])
      log.info(`cloud: ${row.id} ${row.name}: machine ${m.id} at ${row.provider} (${m.providerStatus})`)
    } catch (e) {
      const message = (e as Error).message
      if (retryable(e) && now() - row.created_at < this.timeoutMs) {
        updateProvision(this.db, row.id, { reason: `will retry: ${message}`, updated_at: now() }, ['creating'])
        log.warn(`cloud: ${row.id}: ${message} (will retry)`)
        return
      }
      this.fail(row, message)
    }
  }

  private fail(row: ProvisionRow, reason: string): void {
    if (updateProvision(this.db, row.id, { state: 'failed', reason, updated_at: this.cloud.now() }, STARTING_STATES)) {
      revokePendingEnrollments(this.db, row.name, this.cloud.now())
      log.warn(`cloud: ${row.id} ${row.name} failed: ${reason}`)
    }
  }

  /** Moves every starting provision on; runs on a timer and before status reads. */
  reconcile(): Promise<void> {
    this.reconciling ??= (async () => {
      for (const row of provisionsIn(this.db, STARTING_STATES)) {
        try {
          await this.advance(row)
        } catch (e) {
          log.warn(`cloud: ${row.id}: ${(e as Error).message}`)
        }
      }
    })().finally(() => (this.reconciling = null))
    return this.reconciling
  }

  private async advance(row: ProvisionRow): Promise<void> {
    const now = this.cloud.now()
    const node = this.fabric.registry.get(row.name)
    const nodeState = node ? this.fabric.registry.state(node).state : null
    if (row.state !== 'creating' && nodeState === 'ready') {
      updateProvision(this.db, row.id, { state: 'ready', ready_at: now, reason: null, updated_at: now }, ['booting', 'enrolling'])
      log.info(`cloud: ${row.id} ${row.name} is ready`)
      return
    }
    if (now - row.created_at > this.timeoutMs) {
      const minutes = Math.round(this.timeoutMs / 60_000)
      return this.fail(row, `not ready within ${minutes} minute${minutes === 1 ? '' : 's'} (machine ${row.machine_status ?? 'not created'}, node ${nodeState ?? 'not enrolled'})`)
    }
    if (row.state === 'creating') {
      if (!this.inFlight.has(row.id)) await this.create(row)
      return
    }
    const m = await this.cloud.provider(row.provider as ProviderName).getMachine(row.machine_id!)
    if (!m) return this.fail(row, `the machine ${row.machine_id} no longer exists at ${row.provider}`)
    if (m.status === 'stopped' || m.status === 'failed' || m.status === 'deleting') return this.fail(row, `the machine is ${m.providerStatus} at ${row.provider}`)
    const state = m.status === 'running' ? 'enrolling' : 'booting'
    updateProvision(this.db, row.id, { state, machine_status: m.providerStatus, address: m.address, updated_at: now }, ['booting', 'enrolling'])
  }

  /** 1. stop trusting the node  2. delete the machine  3. remove the node (or leave it revoked while replicas are placed there). */
  async release(id: string, actor: string) {
    const row = this.get(id)
    if (row.state === 'released') return this.view(row)
    if (this.inFlight.has(id)) throw new MusterError('conflict', `${id} is being created right now; release it in a moment.`)
    const provider = this.cloud.provider(row.provider as ProviderName)
    revokePendingEnrollments(this.db, row.name, this.cloud.now())
    const mine = row.machine_id !== null || row.state === 'creating'
    if (mine && this.fabric.registry.get(row.name)?.revokedAt === null) this.fabric.revoke(row.name)
    const machineId = row.machine_id ?? (await provider.findMachine({ requestId: row.request_id, name: row.name, region: row.region }))?.id ?? null
    if (machineId) await provider.deleteMachine(machineId)
    let note = `released by ${actor}`
    if (mine && this.fabric.registry.get(row.name)) {
      try {
        this.fabric.remove(row.name)
      } catch (e) {
        if (!(e instanceof MusterError && e.code === 'node-in-use')) throw e
        note += `; node ${row.name} is revoked and stays listed until its replicas move (${e.message})`
      }
    }
    updateProvision(this.db, id, { state: 'released', reason: note, machine_id: machineId, released_at: this.cloud.now(), updated_at: this.cloud.now() })
    log.info(`cloud: ${id} ${row.name} ${note}`)
    return this.view(this.get(id))
  }

  get(id: string): ProvisionRow {
    const row = /^prv-[a-z2-7]{12}$/.test(id) ? getProvision(this.db, id) : null
    if (!row) throw new MusterError('not-found', `No provision ${id}.`)
    return row
  }

  async show(id: string) {
    this.get(id)
    await this.reconcile()
    return this.view(this.get(id))
  }

  async list() {
    await this.reconcile()
    return { provisions: listProvisions(this.db).map((r) => this.view(r)) }
  }

  view(r: ProvisionRow) {
    const node = this.fabric.registry.get(r.name)
    return {
      id: r.id,
      provider: r.provider,
      name: r.name,
      region: r.region,
      size: r.size,
      role: r.role,
      origin: r.origin,
      requestedBy: r.requested_by,
      state: r.state,
      reason: r.reason,
      machineId: r.machine_id,
      machineStatus: r.machine_status,
      address: r.address,
      node: node ? { name: node.name, state: this.fabric.registry.state(node).state } : null,
      createdAt: iso(r.created_at)!,
      deadline: iso(r.created_at + this.timeoutMs)!,
      readyAt: iso(r.ready_at),
      releasedAt: iso(r.released_at),
    }
  }

  /** Waits for attempts in flight (the Platform is closing). */
  async idle(): Promise<void> {
    await Promise.allSettled([...this.inFlight.values(), this.reconciling])
  }
}

export type ProvisionView = ReturnType<Provisioner['view']>
