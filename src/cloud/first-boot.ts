// One provision's first-boot data, made once and reused byte for byte on
// every attempt: EC2 refuses a ClientToken sent again with other UserData
// (IdempotentParameterMismatch), GCP ignores a repeated requestId's new body,
// and a machine made by a lost attempt must hold the token that is valid. So
// the single-use enrollment is minted once, the cloud-config is written once,
// and both are kept sealed (a key derived from master.key for this purpose,
// bound to the provision's id) until the provision stops starting. What the
// provider resolved for the create (AWS: the image and security group, which
// a new Canonical image could change between a lost answer and its retry) is
// kept in the same sealed record, so every attempt sends the same parameters.
import { MusterError } from '../errors.ts'
import { issueEnrollment } from '../fabric/join-tokens.ts'
import { dropFirstBoot, getFirstBoot, setFirstBoot } from '../store/cloud-first-boot.ts'
import { revokePendingEnrollments } from '../store/join-tokens.ts'
import { revokeExpected } from '../store/cloud-expected.ts'
import { expectMachine, signsIdentity } from './identity/expected.ts'
import type { ProvisionRow } from '../store/cloud-provisions.ts'
import { BINARY_ROUTE } from './binary.ts'
import { servedBinary, servedBinarySha256 } from '../bootstrap/served-binary.ts'
import type { CloudProvider } from './provider.ts'
import { parseInbound } from './inbound.ts'
import { FIRST_BOOT_PURPOSE, sealFor, sealKey, unsealFor } from './seal.ts'
import type { Cloud } from './service.ts'
import { firstBootData } from './user-data.ts'
import type { ProviderName } from '../wire/cloud.ts'

const aad = (provisionId: string) => `${FIRST_BOOT_PURPOSE}:${provisionId}`

/** One provision's first-boot record: the user data and the provider's pins (see CloudProvider.pin). */
export interface FirstBootRecord {
  userData: string
  pins: Record<string, string>
}

/** Sealed as JSON; a record from before pins existed is the cloud-config itself. */
function decode(text: string): FirstBootRecord {
  if (text.startsWith('#cloud-config')) return { userData: text, pins: {} }
  const j = JSON.parse(text) as FirstBootRecord
  return { userData: j.userData, pins: j.pins ?? {} }
}

export class FirstBootStore {
  private readonly key: Uint8Array

  constructor(private readonly cloud: Cloud) {
    this.key = sealKey(cloud.ctx.masterKey, FIRST_BOOT_PURPOSE)
  }

  /** The provision's first-boot data: the kept one, else made now (and kept before anything reaches the provider). */
  async get(row: ProvisionRow, provider: CloudProvider, deadline: number): Promise<FirstBootRecord> {
    const kept = await getFirstBoot(this.cloud.db, row.id)
    if (kept) return this.open(row.id, kept)
    const made = await this.make(row, provider, deadline)
    // Kept only if none is yet; when another attempt kept its own first, that one is what the provider gets.
    await setFirstBoot(this.cloud.db, row.id, sealFor(this.key, aad(row.id), JSON.stringify(made)))
    const winner = await getFirstBoot(this.cloud.db, row.id)
    if (!winner) {
      // released (or failed) meanwhile: the token just minted (or the machine just expected) goes nowhere, and must not stay usable
      await revokeExpected(this.cloud.db, row.name, this.cloud.now())
      await revokePendingEnrollments(this.cloud.db, row.name, this.cloud.now())
      throw new MusterError('conflict', `${row.id} stopped starting while its first-boot data was made.`)
    }
    return this.open(row.id, winner)
  }

  private open(id: string, sealed: Uint8Array): FirstBootRecord {
    const text = unsealFor(this.key, aad(id), sealed)
    if (text === null) throw new MusterError('internal', `The first-boot data of ${id} cannot be opened with this Platform's master key.`)
    return decode(text)
  }

  async drop(id: string): Promise<void> {
    await dropFirstBoot(this.cloud.db, id)
  }

  private async make(row: ProvisionRow, provider: CloudProvider, deadline: number): Promise<FirstBootRecord> {
    const ep = this.cloud.deps.fabric.enrollment
    if (!ep) throw new MusterError('cloud-unavailable', 'The enrollment listener is not open.')
    const inbound = parseInbound(row.inbound)
    // 0. what the create depends on, resolved once (before a token exists: a refusal here mints nothing)
    const pins = provider.pin ? await provider.pin({ requestId: row.request_id, name: row.name, region: row.region, size: row.size, role: row.role, inbound }) : {}
    // 1. an address made before the machine (Azure), so a --probe node can give it
    const address = inbound.agentFrom && provider.reserveAddress ? await provider.reserveAddress({ requestId: row.request_id, name: row.name, region: row.region }) : null
    // 2. where the machine downloads muster from
    const binary = this.cloud.binary ?? (await this.ownBinary())
    // 3. how the machine will prove itself: at AWS, GCP and Azure by what its cloud signs, so the Platform
    //    records what that will be (before the create); at Hetzner and DigitalOcean a single-use enrollment
    //    bound to the server this provision creates, valid until the provision's deadline — a node joining
    //    later belongs to a failed provision — replacing one an interrupted attempt minted but never sent
    let token: string | undefined
    if (signsIdentity(row.provider)) await expectMachine(this.cloud.db, row, provider, this.cloud.now(), deadline)
    else {
      const ttlMinutes = Math.ceil((deadline - this.cloud.now()) / 60_000)
      token = (await issueEnrollment(this.cloud.deps.fabric, row.name, Math.min(Math.max(ttlMinutes, 1), 1440), true, row.id)).token
    }
    // 4. the cloud-config: install the worker role, join pinned to the listener's certificate
    const userData = firstBootData({
      provider: row.provider as ProviderName,
      nodeId: row.name,
      ...(token ? { token } : {}),
      enrollmentUrl: ep.url,
      fingerprint: ep.fingerprint,
      binaryUrl: binary.url,
      binarySha256: binary.sha256,
      // the binary served by this Platform's API over https from its own CA is verified with the CA pin
      binaryPin: !this.cloud.binary && binary.url.startsWith('https://') ? (this.cloud.deps.apiCaPin() ?? undefined) : undefined,
      role: row.role,
      probe: inbound.agentFrom !== null,
      address,
      ssh: inbound.sshFrom !== null,
    })
    const size = provider.userDataBytes ? provider.userDataBytes(userData) : Buffer.byteLength(userData)
    if (size > provider.maxUserDataBytes) throw new MusterError('cloud-unavailable', `The first-boot data (${size} bytes) is over ${row.provider}'s limit of ${provider.maxUserDataBytes}.`)
    return { userData, pins }
  }

  private async ownBinary() {
    const exe = servedBinary()
    if (!exe) throw new MusterError('cloud-unavailable', 'No muster binary to install on the machine: set MUSTER_CLOUD_BINARY_URL and MUSTER_CLOUD_BINARY_SHA256.')
    return { url: `${this.cloud.deps.publicUrl()}${BINARY_ROUTE}`, sha256: await servedBinarySha256(exe) }
  }
}
