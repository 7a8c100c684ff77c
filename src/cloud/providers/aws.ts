// AWS EC2 through its Query API (https://docs.aws.amazon.com/AWSEC2/latest/APIReference/),
// signed with SigV4 from an access key id and secret. Instances are created in
// the region's default VPC with one shared security group that opens only the
// Agent's port; RunInstances' ClientToken is the request id, so a retry never
// launches a second instance. Machine ids are REGION/INSTANCE-ID.
import { MusterError } from '../../errors.ts'
import { refusal, request } from '../http.ts'
import type { AwsCredentials, CloudProvider, CreateMachine, Machine, MachineRef, MachineStatus, Region, Size } from '../provider.ts'
import { signV4, uriEncode } from './aws-sigv4.ts'
import { child, items, parseXml, textOf, type XmlNode } from './xml.ts'

const API_VERSION = '2016-11-15'
/** A short, common list (the full catalogue has hundreds); DescribeInstanceTypes answers their shape. */
export const AWS_SIZES = ['t3.micro', 't3.small', 't3.medium', 't3.large', 't3.xlarge', 'm6i.large', 'c6i.large']
const UBUNTU_OWNER = '099720109477'
const UBUNTU_NAME = 'ubuntu/images/hvm-ssd-gp3/ubuntu-noble-24.04-amd64-server-*'
export const AGENT_GROUP = 'muster-agent'
const AGENT_PORT = 7381

const STATUS: Record<string, MachineStatus> = { pending: 'pending', running: 'running', stopping: 'stopped', stopped: 'stopped', 'shutting-down': 'deleting', terminated: 'deleting' }

export class AwsProvider implements CloudProvider {
  readonly name = 'aws' as const
  readonly maxUserDataBytes = 16 * 1024

  constructor(
    private readonly creds: AwsCredentials,
    private readonly base: string | null,
  ) {}

  private get home(): string {
    return this.creds.region ?? 'us-east-1'
  }

  /** One signed Query API call; the answer's root element, or the refusal. */
  async call(region: string, action: string, params: Record<string, string> = {}): Promise<XmlNode> {
    const url = new URL(this.base ? `${this.base}/` : `https://ec2.${region}.amazonaws.com/`)
    const body = Object.entries({ Action: action, Version: API_VERSION, ...params }).map(([k, v]) => `${uriEncode(k)}=${uriEncode(v)}`).join('&')
    const headers = signV4({
      method: 'POST',
      url,
      headers: { 'content-type': 'application/x-www-form-urlencoded; charset=utf-8' },
      body,
      region,
      service: 'ec2',
      accessKeyId: this.creds.accessKeyId,
      secretAccessKey: this.creds.secretAccessKey,
      sessionToken: this.creds.sessionToken,
      now: new Date(),
    })
    const a = await request('aws', url.toString(), { method: 'POST', headers, body })
    let doc: XmlNode
    try {
      doc = parseXml(a.text)
    } catch {
      throw new MusterError('cloud-provider-error', `aws answered ${a.status} with a body that is not XML.`)
    }
    if (a.status >= 200 && a.status < 300) return doc.children[0] ?? doc
    const err = child(doc, 'Response', 'Errors', 'Error')
    throw refusal('aws', a.status, textOf(err, 'Code'), textOf(err, 'Message'))
  }

  async validate() {
    await this.call(this.home, 'DescribeRegions')
    const id = this.creds.accessKeyId
    return { account: `${id.slice(0, 4)}…${id.slice(-4)} (${this.home})` }
  }

  async regions(): Promise<Region[]> {
    const r = await this.call(this.home, 'DescribeRegions', { AllRegions: 'true' })
    return items(r, 'regionInfo')
      .map((i) => ({ id: textOf(i, 'regionName')!, name: textOf(i, 'regionName')!, available: textOf(i, 'optInStatus') !== 'not-opted-in' }))
      .sort((a, b) => a.id.localeCompare(b.id))
  }

  async sizes(region?: string): Promise<Size[]> {
    const params = Object.fromEntries(AWS_SIZES.map((s, i) => [`InstanceType.${i + 1}`, s]))
    const r = await this.call(region ?? this.home, 'DescribeInstanceTypes', params)
    const found = items(r, 'instanceTypeSet').map((i) => ({
      id: textOf(i, 'instanceType')!,
      cpus: Number(textOf(i, 'vCpuInfo', 'defaultVCpus')),
      memoryMB: Number(textOf(i, 'memoryInfo', 'sizeInMiB')),
      diskGB: null,
      priceMonthly: null,
    }))
    return AWS_SIZES.flatMap((s) => found.filter((f) => f.id === s))
  }

  async findMachine({ requestId, region }: MachineRef): Promise<Machine | null> {
    const r = await this.call(region, 'DescribeInstances', { 'Filter.1.Name': 'client-token', 'Filter.1.Value.1': requestId })
    const live = reservations(r).find((i) => textOf(i, 'instanceState', 'name') !== 'terminated')
    return live ? machine(region, live) : null
  }

  async createMachine(req: CreateMachine): Promise<Machine> {
    const imageId = await this.ubuntuImage(req.region)
    const groupId = await this.agentGroup(req.region)
    const tags = { Name: req.name, 'managed-by': 'muster', 'muster-request': req.requestId, 'muster-role': req.role }
    const params: Record<string, string> = {
      ImageId: imageId,
      InstanceType: req.size,
      MinCount: '1',
      MaxCount: '1',
      ClientToken: req.requestId,
      UserData: Buffer.from(req.userData, 'utf8').toString('base64'),
      'SecurityGroupId.1': groupId,
      'TagSpecification.1.ResourceType': 'instance',
    }
    Object.entries(tags).forEach(([k, v], i) => {
      params[`TagSpecification.1.Tag.${i + 1}.Key`] = k
      params[`TagSpecification.1.Tag.${i + 1}.Value`] = v
    })
    const r = await this.call(req.region, 'RunInstances', params)
    const inst = items(r, 'instancesSet')[0]
    if (!inst) throw new MusterError('cloud-provider-error', 'aws RunInstances answered no instance.')
    return machine(req.region, inst)
  }

  async getMachine(id: string): Promise<Machine | null> {
    const [region, instanceId] = id.split('/')
    if (!region || !instanceId) return null
    try {
      const inst = reservations(await this.call(region, 'DescribeInstances', { 'InstanceId.1': instanceId }))[0]
      if (!inst || textOf(inst, 'instanceState', 'name') === 'terminated') return null
      return machine(region, inst)
    } catch (e) {
      if (e instanceof MusterError && e.detail?.providerCode === 'InvalidInstanceID.NotFound') return null
      throw e
    }
  }

  async deleteMachine(id: string): Promise<void> {
    const [region, instanceId] = id.split('/')
    if (!region || !instanceId) return
    try {
      await this.call(region, 'TerminateInstances', { 'InstanceId.1': instanceId })
    } catch (e) {
      if (!(e instanceof MusterError && e.detail?.providerCode === 'InvalidInstanceID.NotFound')) throw e
    }
  }

  /** The newest Ubuntu 24.04 image Canonical publishes in the region. */
  private async ubuntuImage(region: string): Promise<string> {
    const r = await this.call(region, 'DescribeImages', { 'Owner.1': UBUNTU_OWNER, 'Filter.1.Name': 'name', 'Filter.1.Value.1': UBUNTU_NAME, 'Filter.2.Name': 'state', 'Filter.2.Value.1': 'available' })
    const newest = items(r, 'imagesSet').sort((a, b) => (textOf(b, 'creationDate') ?? '').localeCompare(textOf(a, 'creationDate') ?? ''))[0]
    const id = textOf(newest, 'imageId')
    if (!id) throw new MusterError('cloud-provider-error', `aws has no Ubuntu 24.04 image in ${region}.`)
    return id
  }

  /** The default VPC's group that lets the Platform reach the Agent's port, created once. */
  private async agentGroup(region: string): Promise<string> {
    const found = await this.call(region, 'DescribeSecurityGroups', { 'Filter.1.Name': 'group-name', 'Filter.1.Value.1': AGENT_GROUP })
    const existing = textOf(items(found, 'securityGroupInfo')[0], 'groupId')
    if (existing) return existing
    const created = await this.call(region, 'CreateSecurityGroup', { GroupName: AGENT_GROUP, GroupDescription: 'muster Agent port for the Platform (created by muster)' })
    const groupId = textOf(created, 'groupId')!
    await this.call(region, 'AuthorizeSecurityGroupIngress', {
      GroupId: groupId,
      'IpPermissions.1.IpProtocol': 'tcp',
      'IpPermissions.1.FromPort': String(AGENT_PORT),
      'IpPermissions.1.ToPort': String(AGENT_PORT),
      'IpPermissions.1.IpRanges.1.CidrIp': '0.0.0.0/0',
    })
    return groupId
  }
}

function reservations(r: XmlNode): XmlNode[] {
  return items(r, 'reservationSet').flatMap((res) => items(res, 'instancesSet'))
}

function machine(region: string, i: XmlNode): Machine {
  const state = textOf(i, 'instanceState', 'name') ?? 'pending'
  return { id: `${region}/${textOf(i, 'instanceId')}`, status: STATUS[state] ?? 'pending', providerStatus: state, address: textOf(i, 'ipAddress') ?? null }
}
