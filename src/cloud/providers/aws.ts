// AWS EC2 through its Query API (https://docs.aws.amazon.com/AWSEC2/latest/APIReference/),
// SigV4-signed with keys from aws-credentials.ts (kept, ambient, or an assumed
// role). Instances are created in the region's default VPC, in a security
// group that lets in only what muster was told to (aws-network.ts), with
// IMDSv2 only and a hop limit of 1 (nothing in a container on the machine
// reads the user data and its token). RunInstances' ClientToken is the
// request id, and the image and group are resolved once per provision (`pin`,
// kept sealed with the first-boot data), so a retry sends the same parameters
// and EC2 answers the first instance; should EC2 still say
// IdempotentParameterMismatch, the instance of this token is looked up and
// adopted. User data is the cloud-config gzipped (cloud-init reads gzip),
// against EC2's 16,384 bytes before base64. An instance that ends
// `terminated` is a failed machine with its StateReason as the reason.
// Machine ids are REGION/INSTANCE-ID.
import { MusterError } from '../../errors.ts'
import { isCode } from '../http.ts'
import { backoffMs } from '../retry.ts'
import { awsUrl, type AwsCredentials, type CloudProvider, type CreateMachine, type Machine, type MachineRef, type MachineStatus, type ProviderContext } from '../provider.ts'
import { AwsCredentialSource } from './aws-credentials.ts'
import { gzipText } from '../user-data.ts'
import { AwsNetwork } from './aws-network.ts'
import { queryCall } from './aws-query.ts'
import { items, textOf, type XmlNode } from './xml.ts'
import type { Region, Size } from '../../wire/cloud.ts'

const API_VERSION = '2016-11-15'
/** A short, common list per architecture (the catalogue has hundreds); DescribeInstanceTypes answers their shape. */
export const AWS_SIZES = {
  x86_64: ['t3.micro', 't3.small', 't3.medium', 't3.large', 't3.xlarge', 'm6i.large', 'c6i.large'],
  arm64: ['t4g.micro', 't4g.small', 't4g.medium', 't4g.large', 't4g.xlarge', 'm7g.large', 'c7g.large'],
}
const UBUNTU_OWNER = '099720109477'
const UBUNTU_NAME = { x86_64: 'ubuntu/images/hvm-ssd-gp3/ubuntu-noble-24.04-amd64-server-*', arm64: 'ubuntu/images/hvm-ssd-gp3/ubuntu-noble-24.04-arm64-server-*' }

const STATUS: Record<string, MachineStatus> = { pending: 'pending', running: 'running', stopping: 'stopped', stopped: 'stopped', 'shutting-down': 'failed', terminated: 'failed' }

/** The user data as RunInstances carries it: the cloud-config gzipped (level 9; the same bytes for the same text). */
export function awsUserData(text: string): Uint8Array {
  return gzipText(text)
}

export class AwsProvider implements CloudProvider {
  readonly name = 'aws' as const
  /** "User data is limited to 16 KB, in raw form, before it is base64-encoded" (EC2 User Guide). */
  readonly maxUserDataBytes = 16 * 1024
  private readonly keys: AwsCredentialSource
  private readonly network: AwsNetwork

  constructor(
    creds: AwsCredentials,
    private readonly ctx: ProviderContext,
  ) {
    this.keys = new AwsCredentialSource(creds, ctx, creds.region ?? 'us-east-1')
    this.network = new AwsNetwork((r, a, p, i) => this.call(r, a, p, i), ctx)
  }

  private get home(): string {
    return this.keys.home
  }

  /** One signed EC2 call; reads (Describe*) are safe to send again, writes say so themselves. */
  async call(region: string, action: string, params: Record<string, string> = {}, idempotent = action.startsWith('Describe')): Promise<XmlNode> {
    const url = this.ctx.endpoints.aws ?? awsUrl('ec2', region)
    return queryCall({ service: 'ec2', url, region, action, version: API_VERSION, params, keys: await this.keys.keys(), policy: this.ctx.retry, idempotent })
  }

  async validate() {
    await this.call(this.home, 'DescribeRegions')
    return { account: this.keys.label() }
  }

  async regions(): Promise<Region[]> {
    const r = await this.call(this.home, 'DescribeRegions', { AllRegions: 'true' })
    return items(r, 'regionInfo')
      .map((i) => ({ id: textOf(i, 'regionName')!, name: textOf(i, 'regionName')!, available: textOf(i, 'optInStatus') !== 'not-opted-in' }))
      .sort((a, b) => a.id.localeCompare(b.id))
  }

  /** The shortlist for the binary's architecture, as far as the region offers it (DescribeInstanceTypeOfferings). */
  async sizes(region?: string): Promise<Size[]> {
    const where = region ?? this.home
    const wanted = AWS_SIZES[this.ctx.arch]
    const list = (prefix: string) => Object.fromEntries(wanted.map((s, i) => [`${prefix}.${i + 1}`, s]))
    const offered = await this.call(where, 'DescribeInstanceTypeOfferings', { LocationType: 'region', 'Filter.1.Name': 'instance-type', ...list('Filter.1.Value') })
    const here = wanted.filter((s) => items(offered, 'instanceTypeOfferingSet').some((o) => textOf(o, 'instanceType') === s))
    if (here.length === 0) return []
    const r = await this.call(where, 'DescribeInstanceTypes', Object.fromEntries(here.map((s, i) => [`InstanceType.${i + 1}`, s])))
    const arch = this.ctx.arch
    const found = items(r, 'instanceTypeSet')
      .filter((i) => items(i, 'processorInfo', 'supportedArchitectures').some((a) => a.text.trim() === arch))
      .map((i) => ({ id: textOf(i, 'instanceType')!, cpus: Number(textOf(i, 'vCpuInfo', 'defaultVCpus')), memoryMB: Number(textOf(i, 'memoryInfo', 'sizeInMiB')), diskGB: null, priceMonthly: null, currency: null }))
    return here.flatMap((s) => found.filter((f) => f.id === s))
  }

  userDataBytes(userData: string): number {
    return awsUserData(userData).length
  }

  /**
   * The instance launched with this request's ClientToken: found by the tag every launch carries from
   * its start (TagSpecifications), its clientToken checked again. (The client-token filter would do on
   * EC2; the tag works wherever EC2's API is spoken.) A live one first, else a dead one, whose reason says why.
   */
  async findMachine({ requestId, region }: MachineRef): Promise<Machine | null> {
    const r = await this.call(region, 'DescribeInstances', { 'Filter.1.Name': 'tag:muster-request', 'Filter.1.Value.1': requestId })
    const mine = reservations(r).filter((i) => (textOf(i, 'clientToken') ?? requestId) === requestId)
    const live = mine.find((i) => !['terminated', 'shutting-down'].includes(textOf(i, 'instanceState', 'name') ?? ''))
    const found = live ?? mine[0]
    return found ? machine(region, found) : null
  }

  /** Once per provision: the newest Ubuntu image and the security group, so every attempt launches with the same ones. */
  async pin(req: Omit<CreateMachine, 'userData' | 'pins'>): Promise<Record<string, string>> {
    return { imageId: await this.ubuntuImage(req.region), groupId: await this.network.group(req.region, req.inbound) }
  }

  async createMachine(req: CreateMachine): Promise<Machine> {
    const imageId = req.pins?.imageId ?? (await this.ubuntuImage(req.region))
    // the kept group, its rules repaired (closed stays closed); a group deleted meanwhile is made again
    const groupId = req.pins?.groupId ? await this.network.repairKept(req.region, req.pins.groupId, req.inbound) : await this.network.group(req.region, req.inbound)
    const tags = { Name: req.name, 'managed-by': 'muster', 'muster-request': req.requestId, 'muster-role': req.role }
    const params: Record<string, string> = {
      ImageId: imageId,
      InstanceType: req.size,
      MinCount: '1',
      MaxCount: '1',
      ClientToken: req.requestId,
      UserData: Buffer.from(awsUserData(req.userData)).toString('base64'),
      'SecurityGroupId.1': groupId,
      // IMDSv2 only, one hop: a container on the machine cannot read the user data (and its token)
      'MetadataOptions.HttpEndpoint': 'enabled',
      'MetadataOptions.HttpTokens': 'required',
      'MetadataOptions.HttpPutResponseHopLimit': '1',
      'TagSpecification.1.ResourceType': 'instance',
    }
    Object.entries(tags).forEach(([k, v], i) => {
      params[`TagSpecification.1.Tag.${i + 1}.Key`] = k
      params[`TagSpecification.1.Tag.${i + 1}.Value`] = v
    })
    let r: XmlNode
    try {
      // ClientToken makes this safe to send again: EC2 answers the first launch.
      r = await this.call(req.region, 'RunInstances', params, true)
    } catch (e) {
      if (!isCode(e, 'IdempotentParameterMismatch')) throw e
      // An instance holds this token with other parameters (an image or group that changed since): it is this provision's.
      const adopted = await this.findMachine(req)
      if (adopted) return adopted
      throw new MusterError('cloud-refused', `aws refused the launch (IdempotentParameterMismatch) and shows no instance of ${req.requestId} yet. To fix: release this provision and provision again.`, { providerCode: 'IdempotentParameterMismatch' })
    }
    const inst = items(r, 'instancesSet')[0]
    if (!inst) throw new MusterError('cloud-provider-error', 'aws RunInstances answered no instance.')
    return machine(req.region, inst, textOf(r, 'ownerId') ?? null)
  }

  /** The instance as EC2 shows it; a terminated one is a failed machine (its StateReason says why); null when EC2 does not know it (yet). */
  async getMachine(id: string): Promise<Machine | null> {
    const [region, instanceId] = id.split('/')
    if (!region || !instanceId) return null
    try {
      const inst = reservations(await this.call(region, 'DescribeInstances', { 'InstanceId.1': instanceId }))[0]
      if (!inst) return null
      return machine(region, inst)
    } catch (e) {
      if (isCode(e, 'InvalidInstanceID.NotFound')) return null
      throw e
    }
  }

  /**
   * TerminateInstances' NotFound is not taken on its word: right after a
   * launch EC2 may not know the id yet. A describe decides: still there
   * (not terminated) means terminate again; terminated means gone; unseen is
   * looked at again for a while before it counts as gone.
   */
  async deleteMachine(id: string): Promise<void> {
    const [region, instanceId] = id.split('/')
    if (!region || !instanceId) return
    for (let attempt = 0; ; attempt++) {
      try {
        await this.call(region, 'TerminateInstances', { 'InstanceId.1': instanceId }, true)
        return
      } catch (e) {
        if (!isCode(e, 'InvalidInstanceID.NotFound')) throw e
      }
      const seen = reservations(await this.call(region, 'DescribeInstances', { 'Filter.1.Name': 'instance-id', 'Filter.1.Value.1': instanceId }))[0]
      const state = textOf(seen, 'instanceState', 'name')
      if (state === 'terminated' || state === 'shutting-down') return
      if (!seen && attempt >= 5) return
      await this.ctx.retry.sleep(backoffMs(this.ctx.retry, attempt))
    }
  }

  /** The newest Ubuntu 24.04 image Canonical publishes in the region, for the binary's architecture. */
  private async ubuntuImage(region: string): Promise<string> {
    const r = await this.call(region, 'DescribeImages', { 'Owner.1': UBUNTU_OWNER, 'Filter.1.Name': 'name', 'Filter.1.Value.1': UBUNTU_NAME[this.ctx.arch], 'Filter.2.Name': 'state', 'Filter.2.Value.1': 'available' })
    const newest = items(r, 'imagesSet').sort((a, b) => (textOf(b, 'creationDate') ?? '').localeCompare(textOf(a, 'creationDate') ?? ''))[0]
    const id = textOf(newest, 'imageId')
    if (!id) throw new MusterError('cloud-refused', `aws shows no Ubuntu 24.04 ${this.ctx.arch} image from Canonical (owner ${UBUNTU_OWNER}) in ${region}. To fix: pick another region, or check that the credentials may call ec2:DescribeImages.`)
    return id
  }
}

/** The account of each instance a DescribeInstances answered (its reservation's ownerId). */
const OWNER = new WeakMap<XmlNode, string>()

function reservations(r: XmlNode): XmlNode[] {
  return items(r, 'reservationSet').flatMap((res) => {
    const owner = textOf(res, 'ownerId')
    return items(res, 'instancesSet').map((i) => (owner ? OWNER.set(i, owner) : OWNER, i))
  })
}

function machine(region: string, i: XmlNode, owner: string | null = OWNER.get(i) ?? null): Machine {
  const state = textOf(i, 'instanceState', 'name') ?? 'pending'
  const status = STATUS[state] ?? 'pending'
  // "Server.InsufficientInstanceCapacity: Insufficient capacity." — the code and message EC2 gives for the state change
  const code = textOf(i, 'stateReason', 'code')
  const message = textOf(i, 'stateReason', 'message')
  const said = message && code && message.startsWith(code) ? message : [code, message].filter(Boolean).join(': ')
  const reason = status === 'failed' ? said || textOf(i, 'reason') || null : null
  return { id: `${region}/${textOf(i, 'instanceId')}`, status, providerStatus: state, address: textOf(i, 'ipAddress') ?? null, reason, attestedId: textOf(i, 'instanceId') ?? null, account: owner, requestId: textOf(i, 'clientToken') ?? null }
}
