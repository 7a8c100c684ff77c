// Provisioning: a machine at a provider that installs the worker role and
// joins this Platform by itself. Each request is recorded before the provider
// is called, and moves creating → booting → enrolling → ready, or failed (a
// refusal, a failed asynchronous create, the machine gone, or not ready within
// 20 minutes). Every attempt sends the same first-boot data (first-boot.ts)
// and adopts what an earlier attempt made; a machine the provider does not
// show yet right after its create is still coming (EC2 and GCP are
// eventually consistent) for 3 minutes.
import { randomId } from '../crypto/tokens.ts'
import { MusterError } from '../errors.ts'
import { log } from '../log.ts'
import { getProvision, insertProvision, listProvisions, liveProvisionByName, provisionsIn, STARTING_STATES, updateProvision, type ProvisionRow } from '../store/cloud-provisions.ts'
import type { Db } from '../store/db.ts'
import { isUniqueViolation } from '../store/sql.ts'
import { pendingEnrollments, revokePendingEnrollments } from '../store/join-tokens.ts'
import { isTombstoned } from '../store/nodes.ts'
import { revokeExpected } from '../store/cloud-expected.ts'
import { noteMachine } from './identity/expected.ts'
import { audited, type Actor } from './audit.ts'
import { BINARY_ROUTE } from './binary.ts'
import { servedBinary } from '../bootstrap/served-binary.ts'
import { unreachableReason } from './reachable.ts'
import { FirstBootStore } from './first-boot.ts'
import { inboundJson, parseInbound } from './inbound.ts'
import { CLOSED, type Inbound, type Machine } from './provider.ts'
import type { Cloud } from './service.ts'
import type { ProviderName, ProvisionView } from '../wire/cloud.ts'
import { tunableNumber } from '../tunables.ts'

export interface ProvisionInput {
  provider: ProviderName
  name: string
  region: string
  size: string
  role: 'general' | 'build'
}

/** How long a machine the provider does not show yet after its create counts as still coming (docs/cloud.md). */
export const VISIBILITY_GRACE_MS = 3 * 60_000

const iso = (t: number | null) => (t === null ? null : new Date(t).toISOString())

/**
 * Worth another try: throttling, and what the provider's table (retry.ts) or
 * a network failure marked transient. Anything else is final at once — a
 * refusal without a status too ("no Ubuntu 24.04 image", "no default VPC").
 */
export function retryable(e: unknown): boolean {
  if (!(e instanceof MusterError)) return false
  if (e.code === 'cloud-throttled') return true
  return e.code === 'cloud-provider-error' && e.detail?.retryable === true
}

/** Why a machine counts as failed, in the provider's words: its state, and the code and message it gave. */
export function machineFailure(provider: string, m: Machine): string {
  return `the machine is ${m.providerStatus} at ${provider}${m.reason ? `: ${m.reason}` : ''}`
}

export class Provisioner {
  /** A provision not ready this long after it was requested has failed. */
  timeoutMs = tunableNumber('MUSTER_CLOUD_PROVISION_TIMEOUT_MS')
  /** How long a provision request waits for the provider before answering with the state so far. */
  answerWithinMs = 20_000
  private readonly inFlight = new Map<string, Promise<void>>()
  /** Per provider, when its last throttling answer said to come back (wall clock, as its reset headers are). */
  private readonly quietUntil = new Map<string, number>()
  private reconciling: Promise<void> | null = null
  readonly firstBoot: FirstBootStore

  constructor(private readonly cloud: Cloud) {
    this.firstBoot = new FirstBootStore(cloud)
  }

  private get db() {
    return this.cloud.db
  }
  private get fabric() {
    return this.cloud.deps.fabric
  }

  ownBinary(): string | null {
    return servedBinary()
  }

  /** Refuses what could never work, before anything is recorded or ordered. */
  async check(input: ProvisionInput): Promise<void> {
    const why = this.cloud.unavailableReason()
    if (why) throw new MusterError('cloud-unavailable', `Provisioning is not available: ${why}.`)
    const provider = await this.cloud.provider(input.provider)
    // a machine that could never reach this Platform is refused before the provider is asked anything more
    const binaryUrl = this.cloud.binary?.url ?? `${this.cloud.deps.publicUrl()}${BINARY_ROUTE}`
    const unreachable = unreachableReason(input.provider, this.cloud.endpoints, { enrollmentUrl: this.fabric.enrollment?.url, apiUrl: this.fabric.nodeAnchors().platformUrl, binaryUrl })
    if (unreachable) throw new MusterError('cloud-unavailable', `Refusing to provision: ${unreachable}.`)
    // a region the provider does not list would fail on every attempt (an unknown EC2 region does not even resolve)
    const region = (await provider.regions()).find((r) => r.id === input.region)
    if (!region) throw new MusterError('invalid-request', `${input.provider} has no region ${input.region}; \`muster cloud regions --provider ${input.provider}\` lists them.`, { field: 'region' })
    if (!region.available) throw new MusterError('cloud-refused', `The region ${input.region} is not available to this ${input.provider} account. To fix: enable it (AWS: opt in under Account → AWS Regions) or pick another region.`, { field: 'region' })
    const name = input.name
    if (name === 'local' || this.fabric.registry.get(name)) throw new MusterError('name-taken', `A node named ${name} is already registered.`)
    const live = await liveProvisionByName(this.db, name)
    if (live) throw new MusterError('name-taken', `Provision ${live.id} already uses the name ${name}.`)
    if ((await pendingEnrollments(this.db, this.cloud.now(), name)).length > 0) throw new MusterError('enrollment-pending', `${name} has an unused enrollment issued by an operator; pick another name or let it expire.`)
    const released = (await listProvisions(this.db)).some((r) => r.name === name && r.state === 'released')
    if ((await isTombstoned(this.db, name)) && !released) throw new MusterError('name-taken', `The name ${name} belonged to a removed node; pick another name.`)
  }

  /** Records a provision (state creating); null when its request id was recorded before. */
  async record(input: ProvisionInput, origin: 'operator' | 'autoscale', actor: string, requestId?: string, db: Db = this.db, inbound: Inbound = CLOSED): Promise<ProvisionRow | null> {
    const id = `prv-${randomId(12)}`
    try {
      const fresh = await insertProvision(db, { id, request_id: requestId ?? id, provider: input.provider, name: input.name, region: input.region, size: input.size, role: input.role, origin, requested_by: actor, created_at: this.cloud.now(), inbound: inboundJson(inbound) })
      return fresh ? await getProvision(db, id) : null
    } catch (e) {
      if (isUniqueViolation(e)) throw new MusterError('name-taken', `Another provision already uses the name ${input.name}.`)
      throw e
    }
  }

  async request(input: ProvisionInput, actor: Actor, inbound: Inbound = CLOSED) {
    await this.check(input)
    const detail = `${input.provider} ${input.region} ${input.size} role=${input.role}${inbound.agentFrom ? ` probe-from=${inbound.agentFrom}` : ''}${inbound.sshFrom ? ` ssh-from=${inbound.sshFrom}` : ''}`
    const row = await audited(this.db, () => this.cloud.now(), actor, 'provision', { provider: input.provider, target: input.name, detail }, async () => (await this.record(input, 'operator', actor.principal, undefined, this.db, inbound))!, (r) => `${r.id}: ${detail}`)
    log.info(`cloud: ${row.id} requested by ${actor.principal}: ${input.name} at ${input.provider} ${input.region} ${input.size}`)
    // Most creates answer in seconds; a slow one (Azure builds its network first) goes on in the background.
    let timer: ReturnType<typeof setTimeout> | undefined
    await Promise.race([this.create(row), new Promise((r) => (timer = setTimeout(r, this.answerWithinMs)))])
    clearTimeout(timer)
    return this.view((await getProvision(this.db, row.id))!)
  }

  /** Creates (or adopts) the machine of a provision in state creating; one attempt at a time per provision. */
  create(row: ProvisionRow): Promise<void> {
    const running = this.inFlight.get(row.id)
    if (running) return running
    // Several Platforms on one store: only the cloud-reconcile holder orders machines, so two Platforms never
    // order one provision at once; elsewhere the request is recorded (creating) and the holder's next reconcile orders it.
    if (!this.cloud.ctx.leases.lease('cloud-reconcile').held) return Promise.resolve()
    const p = this.attempt(row).finally(() => this.inFlight.delete(row.id))
    this.inFlight.set(row.id, p)
    return p
  }

  private async attempt(row: ProvisionRow): Promise<void> {
    const now = () => this.cloud.now()
    try {
      const provider = await this.cloud.provider(row.provider as ProviderName)
      // 1. the first-boot data: made once and kept sealed, the same bytes on every attempt
      const { userData, pins } = await this.firstBoot.get(row, provider, row.created_at + this.timeoutMs)
      // 2. a machine an earlier attempt made with this request id is adopted: its token is the one
      const ref = { requestId: row.request_id, name: row.name, region: row.region }
      let m = await provider.findMachine(ref)
      // 3. else the machine, idempotent on the request id where the API allows
      m ??= await provider.createMachine({ ...ref, size: row.size, userData, role: row.role, inbound: parseInbound(row.inbound), pins })
      const t = now()
      // 4. a machine that died at launch (EC2 terminated it; the ClientToken answers the dead one): failed at once,
      //    the dead machine recorded with the provider's reason; a new provision gets a new request id and token
      if (m.status === 'failed' || m.status === 'deleting') {
        await updateProvision(this.db, row.id, { machine_id: m.id, machine_status: m.providerStatus, ordered_at: t, updated_at: t }, ['creating'])
        return await this.fail(row, machineFailure(row.provider, m))
      }
      const state = m.status === 'running' ? 'enrolling' : 'booting'
      // what the cloud will attest as this machine's id, as soon as the create says it
      await noteMachine(this.db, row.id, m)
      await updateProvision(this.db, row.id, { state, machine_id: m.id, machine_status: m.providerStatus, address: m.address, operation: m.operation ?? null, ordered_at: t, reason: null, updated_at: t }, ['creating'])
      log.info(`cloud: ${row.id} ${row.name}: machine ${m.id} at ${row.provider} (${m.providerStatus})`)
    } catch (e) {
      const message = (e as Error).message
      this.noteThrottle(row.provider, e)
      if (retryable(e) && now() - row.created_at < this.timeoutMs) {
        await updateProvision(this.db, row.id, { reason: `will retry: ${message}`, updated_at: now() }, ['creating'])
        log.warn(`cloud: ${row.id}: ${message} (will retry)`)
        return
      }
      await this.fail(row, message)
    }
  }

  private noteThrottle(provider: string, e: unknown): void {
    const after = e instanceof MusterError && e.code === 'cloud-throttled' ? e.detail?.retryAfterMs : undefined
    if (typeof after === 'number') this.quietUntil.set(provider, Date.now() + after)
  }

  private async fail(row: ProvisionRow, reason: string): Promise<void> {
    if (await updateProvision(this.db, row.id, { state: 'failed', reason, first_boot: null, updated_at: this.cloud.now() }, STARTING_STATES)) {
      await revokeExpected(this.db, row.name, this.cloud.now())
      await revokePendingEnrollments(this.db, row.name, this.cloud.now())
      log.warn(`cloud: ${row.id} ${row.name} failed: ${reason}`)
    }
  }

  /**
   * Before a status read: only on the Platform holding the `cloud-reconcile`
   * lease (several Platforms on one store), so a read on another Platform
   * never asks a provider, nor starts a create the holder may be making.
   */
  private async reconcileIfHeld(): Promise<void> {
    if (this.cloud.ctx.leases.lease('cloud-reconcile').held) await this.reconcile()
  }

  /** Moves every starting provision on; runs on a timer (under the `cloud-reconcile` lease) and before status reads. */
  reconcile(): Promise<void> {
    this.reconciling ??= (async () => {
      for (const row of await provisionsIn(this.db, STARTING_STATES)) {
        // A provider that asked to be left alone until its reset is not asked again before it.
        if ((this.quietUntil.get(row.provider) ?? 0) > Date.now() && this.cloud.now() - row.created_at <= this.timeoutMs) continue
        try {
          await this.advance(row)
        } catch (e) {
          this.noteThrottle(row.provider, e)
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
      await updateProvision(this.db, row.id, { state: 'ready', ready_at: now, reason: null, first_boot: null, updated_at: now }, ['booting', 'enrolling'])
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
    const provider = await this.cloud.provider(row.provider as ProviderName)
    const m = await provider.getMachine(row.machine_id!)
    // An asynchronous create that failed (GCP: quota, capacity) is the reason, whatever the machine looks like.
    if (row.operation && provider.operationError && (!m || m.status === 'pending')) {
      const failed = await provider.operationError(row.machine_id!, row.operation)
      if (failed) return this.fail(row, `${row.provider} could not create the machine: ${failed}`)
    }
    if (!m) {
      // Right after its create the provider may not show it yet: still coming, for a while.
      const since = row.ordered_at ?? row.updated_at
      if (row.seen_at === null && now - since < VISIBILITY_GRACE_MS) {
        await updateProvision(this.db, row.id, { reason: `${row.provider} does not show machine ${row.machine_id} yet; still coming`, updated_at: now }, ['booting', 'enrolling'])
        return
      }
      return this.fail(row, `the machine ${row.machine_id} no longer exists at ${row.provider}`)
    }
    if (m.status === 'stopped' || m.status === 'failed' || m.status === 'deleting') return this.fail(row, machineFailure(row.provider, m))
    await noteMachine(this.db, row.id, m)
    const state = m.status === 'running' ? 'enrolling' : 'booting'
    await updateProvision(this.db, row.id, { state, machine_status: m.providerStatus, address: m.address, seen_at: row.seen_at ?? now, reason: null, updated_at: now }, ['booting', 'enrolling'])
  }

  /** 1. stop trusting the node  2. delete the machine  3. remove the node (or leave it revoked while replicas are placed there). */
  async release(id: string, actor: Actor) {
    const row = await this.get(id)
    if (row.state === 'released') return this.view(row)
    if (this.inFlight.has(id)) throw new MusterError('conflict', `${id} is being created right now; release it in a moment.`)
    const provider = await this.cloud.provider(row.provider as ProviderName)
    return audited(this.db, () => this.cloud.now(), actor, 'release', { provider: row.provider, target: row.name, detail: id }, async () => {
      await revokePendingEnrollments(this.db, row.name, this.cloud.now())
      await revokeExpected(this.db, row.name, this.cloud.now())
      const mine = row.machine_id !== null || row.state === 'creating'
      if (mine && this.fabric.registry.get(row.name)?.revokedAt === null) await this.fabric.revoke(row.name)
      const machineId = row.machine_id ?? (await provider.findMachine({ requestId: row.request_id, name: row.name, region: row.region }))?.id ?? null
      if (machineId) await provider.deleteMachine(machineId)
      let note = `released by ${actor.principal}`
      if (mine && this.fabric.registry.get(row.name)) {
        try {
          await this.fabric.remove(row.name)
        } catch (e) {
          if (!(e instanceof MusterError && e.code === 'node-in-use')) throw e
          note += `; node ${row.name} is revoked and stays listed until its replicas move (${e.message})`
        }
      }
      await updateProvision(this.db, id, { state: 'released', reason: note, machine_id: machineId, first_boot: null, released_at: this.cloud.now(), updated_at: this.cloud.now() })
      log.info(`cloud: ${id} ${row.name} ${note}`)
      return this.view(await this.get(id))
    }, (v) => `${id}: ${v.reason}`)
  }

  async get(id: string): Promise<ProvisionRow> {
    const row = /^prv-[a-z2-7]{12}$/.test(id) ? await getProvision(this.db, id) : null
    if (!row) throw new MusterError('not-found', `No provision ${id}.`)
    return row
  }

  /**
   * `reconcile`: move provisions on first (asking the provider), for a reader who may manage machines anyway.
   * Anyone else (a viewer, in a loop perhaps) is shown the last reconcile, the timer's every few seconds: a
   * read never turns into provider calls on their demand.
   */
  async show(id: string, opts: { reconcile: boolean }) {
    await this.get(id)
    if (opts.reconcile) await this.reconcileIfHeld()
    return this.view(await this.get(id))
  }

  async list(opts: { reconcile: boolean }) {
    if (opts.reconcile) await this.reconcileIfHeld()
    return { provisions: (await listProvisions(this.db)).map((r) => this.view(r)) }
  }

  view(r: ProvisionRow): ProvisionView {
    const node = this.fabric.registry.get(r.name)
    const inbound = parseInbound(r.inbound)
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
      inbound: { agentFrom: inbound.agentFrom, sshFrom: inbound.sshFrom },
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

