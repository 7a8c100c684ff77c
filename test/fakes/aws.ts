// A local EC2 Query API (https://docs.aws.amazon.com/AWSEC2/latest/APIReference/):
// SigV4 (aws-auth.ts), XML answers and errors, Ubuntu images per
// architecture, instance types with their processor architectures and
// regional offerings, a default VPC and another VPC per region, security
// groups in a VPC with tags, ingress permissions, Authorize/Revoke, and a new
// group that AuthorizeSecurityGroupIngress does not find for a moment;
// RunInstances with ClientToken idempotency (same token, other parameters:
// IdempotentParameterMismatch; the same token again answers the instance as it
// is now, a dead one too) and the 16,384-byte limit on the user data before
// base64 (gzip user data is what cloud-init reads, decompressed);
// MetadataOptions kept as sent (HttpTokens optional unless told); instances
// that reads (and TerminateInstances) do not see right after launch (eventual
// consistency); pending → running, or pending → terminated with a StateReason
// (Server.InsufficientInstanceCapacity …) when a launch is set to fail;
// terminated instances that linger with theirs; the client-token and tag:KEY
// filters; an account not signed up (401 OptInRequired) and actions the caller
// may not call (403 UnauthorizedOperation); RequestLimitExceeded (503)
// throttling. STS at /sts/, IMDSv2 at /latest/, container credentials at /v2/credentials/ and /v1/credentials.
import { gunzipSync } from 'bun'
import { serveFake, type FakeMachine, type FakeServer } from './common.ts'
import { AwsIdentity, ec2Error as error } from './aws-auth.ts'

const REGIONS = ['us-east-1', 'eu-central-1', 'eu-west-1', 'ap-southeast-2']
const TYPES: Record<string, [number, number, string]> = {
  't3.micro': [2, 1024, 'x86_64'],
  't3.small': [2, 2048, 'x86_64'],
  't3.medium': [2, 4096, 'x86_64'],
  't3.large': [2, 8192, 'x86_64'],
  't3.xlarge': [4, 16384, 'x86_64'],
  'm6i.large': [2, 8192, 'x86_64'],
  'c6i.large': [2, 4096, 'x86_64'],
  't4g.micro': [2, 1024, 'arm64'],
  't4g.small': [2, 2048, 'arm64'],
  'm7g.large': [2, 8192, 'arm64'],
}
/** eu-west-1 lacks c6i.large here: offerings differ by region. */
const NOT_OFFERED: Record<string, string[]> = { 'eu-west-1': ['c6i.large'] }
const IMAGES = [
  { id: 'ami-0a1b2c3d4e5f60718', name: 'ubuntu/images/hvm-ssd-gp3/ubuntu-noble-24.04-amd64-server-20250110', date: '2025-01-10T00:00:00.000Z', arch: 'x86_64' },
  { id: 'ami-0f9e8d7c6b5a49382', name: 'ubuntu/images/hvm-ssd-gp3/ubuntu-noble-24.04-amd64-server-20250305', date: '2025-03-05T00:00:00.000Z', arch: 'x86_64' },
  { id: 'ami-0aa0aa0aa0aa0aa01', name: 'ubuntu/images/hvm-ssd-gp3/ubuntu-noble-24.04-arm64-server-20250305', date: '2025-03-05T00:00:00.000Z', arch: 'arm64' },
  { id: 'ami-0123456789abcdef0', name: 'ubuntu/images/hvm-ssd/ubuntu-jammy-22.04-amd64-server-20250101', date: '2025-01-01T00:00:00.000Z', arch: 'x86_64' },
]
/** Published later (fake.newImage): the newest x86 image from then on. */
const NEW_IMAGE = { id: 'ami-0bbbbbbbbbbbbbbb1', name: 'ubuntu/images/hvm-ssd-gp3/ubuntu-noble-24.04-amd64-server-20250601', date: '2025-06-01T00:00:00.000Z', arch: 'x86_64' }
const NS = 'http://ec2.amazonaws.com/doc/2016-11-15/'
const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;')
const xml = (action: string, inner: string) =>
  new Response(`<?xml version="1.0" encoding="UTF-8"?>\n<${action}Response xmlns="${NS}"><requestId>${crypto.randomUUID()}</requestId>${inner}</${action}Response>`, { headers: { 'content-type': 'text/xml;charset=UTF-8' } })

function list(p: URLSearchParams, prefix: string): string[] {
  const out: string[] = []
  for (let i = 1; p.has(`${prefix}.${i}`); i++) out.push(p.get(`${prefix}.${i}`)!)
  return out
}

function filters(p: URLSearchParams): Map<string, string[]> {
  const out = new Map<string, string[]>()
  for (let i = 1; p.has(`Filter.${i}.Name`); i++) out.set(p.get(`Filter.${i}.Name`)!, list(p, `Filter.${i}.Value`))
  return out
}

function tagsFrom(p: URLSearchParams, resourceType: string): Record<string, string> {
  const tags: Record<string, string> = {}
  for (let s = 1; p.has(`TagSpecification.${s}.ResourceType`); s++) {
    if (p.get(`TagSpecification.${s}.ResourceType`) !== resourceType) continue
    for (let i = 1; p.has(`TagSpecification.${s}.Tag.${i}.Key`); i++) tags[p.get(`TagSpecification.${s}.Tag.${i}.Key`)!] = p.get(`TagSpecification.${s}.Tag.${i}.Value`) ?? ''
  }
  return tags
}

/** IpPermissions.N.* as "proto:from-to:source" grants. */
function permissions(p: URLSearchParams): string[] {
  const out: string[] = []
  for (let i = 1; p.has(`IpPermissions.${i}.IpProtocol`); i++) {
    const n = `IpPermissions.${i}`
    const head = `${p.get(`${n}.IpProtocol`)}:${p.get(`${n}.FromPort`) ?? ''}-${p.get(`${n}.ToPort`) ?? ''}`
    for (const [kind, key] of [['IpRanges', 'CidrIp'], ['Ipv6Ranges', 'CidrIpv6'], ['Groups', 'GroupId']]) for (let j = 1; p.has(`${n}.${kind}.${j}.${key}`); j++) out.push(`${head}:${p.get(`${n}.${kind}.${j}.${key}`)}`)
  }
  return out
}

const glob = (pattern: string, s: string) => new RegExp(`^${pattern.split('*').map((x) => x.replace(/[.+?^${}()|[\]\\]/g, '\\$&')).join('.*')}$`).test(s)

export interface SecurityGroup {
  id: string
  name: string
  region: string
  vpc: string
  tags: Record<string, string>
  /** "proto:from-to:source" */
  ingress: string[]
  createdAt: number
}

export interface AwsFake extends FakeServer {
  accessKeyId: string
  secretAccessKey: string
  identity: AwsIdentity
  groups: SecurityGroup[]
  /** A new group is not found by AuthorizeSecurityGroupIngress this long after its create. */
  groupLagMs: number
  stsUrl: string
  /** The next launch goes pending → terminated at boot with this StateReason (EC2 had no capacity after all). */
  failNextLaunch: { code: string; message: string } | null
  /** The account is not signed up for EC2: every EC2 call answers 401 OptInRequired. */
  optedOut: boolean
  /** EC2 actions refused with 403 UnauthorizedOperation to keys of `who` matching this (e.g. ':user/'). */
  deny: { who: string; actions: string[] } | null
  /** The regions have no default VPC (deleted by the account's owner). */
  noDefaultVpc: boolean
  /** An Ubuntu image published later than the others (a new Canonical build): DescribeImages shows it when true. */
  newImage: boolean
}

export function startAwsFake(): AwsFake {
  const accessKeyId = 'AKIAIOSFODNN7EXAMPLE'
  const secretAccessKey = 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY'
  const identity = new AwsIdentity(accessKeyId, secretAccessKey)
  const groups: SecurityGroup[] = []
  const terminated = new Map<string, FakeMachine>()
  const defaultVpc = (region: string) => `vpc-0default${REGIONS.indexOf(region)}`
  const groupXml = (g: SecurityGroup) => {
    const perms = g.ingress.map((x) => {
      const i1 = x.indexOf(':')
      const i2 = x.indexOf(':', i1 + 1)
      const [proto, ports, source] = [x.slice(0, i1), x.slice(i1 + 1, i2), x.slice(i2 + 1)]
      const [from, to] = ports.split('-')
      const src = source.startsWith('sg-') ? `<groups><item><groupId>${source}</groupId></item></groups>` : source.includes(':') ? `<ipv6Ranges><item><cidrIpv6>${source}</cidrIpv6></item></ipv6Ranges>` : `<ipRanges><item><cidrIp>${source}</cidrIp></item></ipRanges>`
      return `<item><ipProtocol>${proto}</ipProtocol>${from ? `<fromPort>${from}</fromPort>` : ''}${to ? `<toPort>${to}</toPort>` : ''}${src}</item>`
    })
    return `<item><ownerId>123456789012</ownerId><groupId>${g.id}</groupId><groupName>${esc(g.name)}</groupName><groupDescription>x</groupDescription><vpcId>${g.vpc}</vpcId><ipPermissions>${perms.join('')}</ipPermissions><ipPermissionsEgress><item><ipProtocol>-1</ipProtocol><ipRanges><item><cidrIp>0.0.0.0/0</cidrIp></item></ipRanges></item></ipPermissionsEgress><tagSet>${Object.entries(g.tags).map(([k, v]) => `<item><key>${esc(k)}</key><value>${esc(v)}</value></item>`).join('')}</tagSet></item>`
  }
  /** A launch set to fail ends terminated at boot time, with its StateReason (and lingers, as terminated instances do). */
  const settle = () => {
    for (const m of [...fake.book.machines.values()]) {
      const dies = m.extra.dies as { code: string; message: string } | undefined
      if (!dies || Date.now() - m.createdAt < fake.book.bootMs) continue
      fake.book.machines.delete(m.id)
      m.running = false
      m.extra.stateReason = dies
      terminated.set(m.id, m)
    }
  }
  // a machine someone stopped (extra.stopped, as from the console) answers stopped
  const stateOf = (m: FakeMachine) => (terminated.has(m.id) ? 'terminated' : m.extra.stopped ? 'stopped' : m.running ? 'running' : 'pending')
  const instanceXml = (m: FakeMachine, state = stateOf(m)) => {
    const code = { pending: 0, running: 16, 'shutting-down': 32, terminated: 48, stopping: 64, stopped: 80 }[state]
    const reason = m.extra.stateReason as { code: string; message: string } | undefined
    const mo = m.extra.metadataOptions as Record<string, string>
    return `<item><instanceId>${m.id}</instanceId><imageId>${m.extra.imageId}</imageId><instanceState><code>${code}</code><name>${state}</name></instanceState>${reason && state === 'terminated' ? `<stateReason><code>${esc(reason.code)}</code><message>${esc(reason.message)}</message></stateReason><reason>User initiated</reason>` : ''}<instanceType>${m.size}</instanceType><clientToken>${esc(m.extra.clientToken as string)}</clientToken>${m.running && state === 'running' ? `<ipAddress>${m.address}</ipAddress>` : ''}<placement><availabilityZone>${m.region}a</availabilityZone></placement><vpcId>${defaultVpc(m.region)}</vpcId><groupSet><item><groupId>${m.extra.securityGroup}</groupId></item></groupSet><metadataOptions><state>applied</state><httpTokens>${mo.HttpTokens}</httpTokens><httpPutResponseHopLimit>${mo.HttpPutResponseHopLimit}</httpPutResponseHopLimit><httpEndpoint>${mo.HttpEndpoint}</httpEndpoint></metadataOptions><tagSet>${Object.entries(m.labels).map(([k, v]) => `<item><key>${esc(k)}</key><value>${esc(v)}</value></item>`).join('')}</tagSet></item>`
  }
  const reservation = (ms: [FakeMachine, string?][]) => `<reservationSet>${ms.map(([m, st]) => `<item><reservationId>${m.extra.reservationId}</reservationId><ownerId>123456789012</ownerId><groupSet/><instancesSet>${instanceXml(m, st)}</instancesSet></item>`).join('')}</reservationSet>`

  const handle = async (req: Request, url: URL): Promise<Response> => {
    if (url.pathname.startsWith('/latest/')) return identity.imds(req, url)
    if (url.pathname.startsWith('/v2/credentials/') || url.pathname === '/v1/credentials') return identity.container(req, url)
    if (req.method === 'POST' && url.pathname === '/sts/') return identity.sts(req, url, REGIONS)
    if (req.method !== 'POST' || url.pathname !== '/') return error(400, 'InvalidAction', 'The action is not valid for this web service.')
    const body = await req.text()
    const check = identity.check(req, url, body, 'ec2', REGIONS)
    if ('error' in check) return check.error
    const region = check.region
    const p = new URLSearchParams(body)
    const action = p.get('Action') ?? ''
    if (p.get('Version') !== '2016-11-15') return error(400, 'InvalidParameterValue', 'Version is required')
    // https://docs.aws.amazon.com/AWSEC2/latest/APIReference/errors-overview.html: OptInRequired is a 401, UnauthorizedOperation a 403
    if (fake.optedOut) return error(401, 'OptInRequired', 'You are not subscribed to this service. Please go to http://aws.amazon.com to subscribe.')
    if (fake.deny && check.key.who.includes(fake.deny.who) && fake.deny.actions.includes(action)) return error(403, 'UnauthorizedOperation', `You are not authorized to perform this operation. User: ${check.key.who} is not authorized to perform: ec2:${action} because no identity-based policy allows the ec2:${action} action.`)
    settle()
    const book = fake.book
    const mine = (m: FakeMachine) => m.region === region
    switch (action) {
      case 'DescribeRegions':
        return xml(action, `<regionInfo>${REGIONS.map((r) => `<item><regionName>${r}</regionName><regionEndpoint>ec2.${r}.amazonaws.com</regionEndpoint><optInStatus>${r === 'ap-southeast-2' ? 'not-opted-in' : 'opt-in-not-required'}</optInStatus></item>`).join('')}</regionInfo>`)
      case 'DescribeInstanceTypeOfferings': {
        const wanted = filters(p).get('instance-type') ?? Object.keys(TYPES)
        const here = wanted.filter((t) => TYPES[t] && !(NOT_OFFERED[region] ?? []).includes(t))
        return xml(action, `<instanceTypeOfferingSet>${here.map((t) => `<item><instanceType>${t}</instanceType><locationType>region</locationType><location>${region}</location></item>`).join('')}</instanceTypeOfferingSet>`)
      }
      case 'DescribeInstanceTypes': {
        const wanted = list(p, 'InstanceType')
        const bad = wanted.find((t) => !TYPES[t])
        if (bad) return error(400, 'InvalidInstanceType', `The following supplied instance types do not exist: [${bad}]`)
        return xml(action, `<instanceTypeSet>${wanted.map((t) => `<item><instanceType>${t}</instanceType><processorInfo><supportedArchitectures><item>${TYPES[t]![2]}</item></supportedArchitectures></processorInfo><vCpuInfo><defaultVCpus>${TYPES[t]![0]}</defaultVCpus></vCpuInfo><memoryInfo><sizeInMiB>${TYPES[t]![1]}</sizeInMiB></memoryInfo></item>`).join('')}</instanceTypeSet>`)
      }
      case 'DescribeImages': {
        const f = filters(p)
        const owners = list(p, 'Owner')
        const found = [...IMAGES, ...(fake.newImage ? [NEW_IMAGE] : [])].filter((i) => (!owners.length || owners.includes('099720109477')) && (f.get('name') ?? ['*']).some((n) => glob(n, i.name)))
        return xml(action, `<imagesSet>${found.map((i) => `<item><imageId>${i.id}</imageId><name>${i.name}</name><architecture>${i.arch}</architecture><imageState>available</imageState><creationDate>${i.date}</creationDate><imageOwnerId>099720109477</imageOwnerId></item>`).join('')}</imagesSet>`)
      }
      case 'DescribeVpcs': {
        const f = filters(p)
        const vpcs = [
          { id: defaultVpc(region), isDefault: true, cidr: '172.31.0.0/16' },
          { id: `vpc-0other${REGIONS.indexOf(region)}`, isDefault: false, cidr: '10.0.0.0/16' },
        ].filter((v) => (!v.isDefault || !fake.noDefaultVpc) && (!f.has('is-default') || f.get('is-default')!.includes(String(v.isDefault))))
        return xml(action, `<vpcSet>${vpcs.map((v) => `<item><vpcId>${v.id}</vpcId><state>available</state><cidrBlock>${v.cidr}</cidrBlock><isDefault>${v.isDefault}</isDefault></item>`).join('')}</vpcSet>`)
      }
      case 'DescribeSecurityGroups': {
        const f = filters(p)
        const found = groups.filter(
          (g) =>
            g.region === region &&
            [...f.entries()].every(([name, values]) => {
              if (name === 'vpc-id') return values.includes(g.vpc)
              if (name === 'group-name') return values.includes(g.name)
              if (name === 'group-id') return values.includes(g.id)
              if (name.startsWith('tag:')) return values.includes(g.tags[name.slice(4)] ?? '\0')
              return false
            }),
        )
        return xml(action, `<securityGroupInfo>${found.map(groupXml).join('')}</securityGroupInfo>`)
      }
      case 'CreateSecurityGroup': {
        const name = p.get('GroupName') ?? ''
        const vpc = p.get('VpcId') ?? defaultVpc(region)
        if (!name || !p.get('GroupDescription')) return error(400, 'MissingParameter', 'The request must contain the parameter GroupName and GroupDescription')
        if (groups.some((g) => g.region === region && g.vpc === vpc && g.name === name)) return error(400, 'InvalidGroup.Duplicate', `The security group '${name}' already exists for VPC '${vpc}'`)
        const g = { id: `sg-0${crypto.randomUUID().replace(/-/g, '').slice(0, 16)}`, name, region, vpc, tags: tagsFrom(p, 'security-group'), ingress: [] as string[], createdAt: Date.now() }
        groups.push(g)
        return xml(action, `<return>true</return><groupId>${g.id}</groupId>`)
      }
      case 'AuthorizeSecurityGroupIngress':
      case 'RevokeSecurityGroupIngress': {
        const g = groups.find((x) => x.id === p.get('GroupId') && x.region === region)
        if (!g || Date.now() - g.createdAt < fake.groupLagMs) return error(400, 'InvalidGroup.NotFound', `The security group '${p.get('GroupId')}' does not exist`)
        const perms = permissions(p)
        if (action === 'RevokeSecurityGroupIngress') {
          g.ingress = g.ingress.filter((x) => !perms.includes(x))
          return xml(action, '<return>true</return>')
        }
        const dup = perms.find((x) => g.ingress.includes(x))
        if (dup) return error(400, 'InvalidPermission.Duplicate', `the specified rule "${dup}" already exists`)
        g.ingress.push(...perms)
        return xml(action, '<return>true</return>')
      }
      case 'RunInstances': {
        const token = p.get('ClientToken') ?? ''
        const same = [...book.machines.values(), ...terminated.values()].find((m) => m.extra.clientToken === token && token && mine(m))
        const signature = JSON.stringify([p.get('ImageId'), p.get('InstanceType'), p.get('UserData'), p.get('SecurityGroupId.1')])
        if (same) return same.extra.signature === signature ? xml(action, `<reservationId>${same.extra.reservationId}</reservationId><ownerId>123456789012</ownerId><groupSet/><instancesSet>${instanceXml(same)}</instancesSet>`) : error(400, 'IdempotentParameterMismatch', 'Arguments on this idempotent request are inconsistent with arguments used in previous request(s).')
        const type = TYPES[p.get('InstanceType') ?? '']
        if (!type) return error(400, 'InvalidParameterValue', `Invalid value '${p.get('InstanceType')}' for InstanceType.`)
        const image = [...IMAGES, NEW_IMAGE].find((i) => i.id === p.get('ImageId'))
        if (!image) return error(400, 'InvalidAMIID.NotFound', `The image id '[${p.get('ImageId')}]' does not exist`)
        if (image.arch !== type[2]) return error(400, 'InvalidParameterValue', `The architecture '${type[2]}' of the specified instance type does not match the architecture '${image.arch}' of the specified AMI.`)
        const sg = p.get('SecurityGroupId.1')
        const group = groups.find((g) => g.id === sg && g.region === region)
        if (sg && !group) return error(400, 'InvalidGroup.NotFound', `The security group '${sg}' does not exist`)
        if (group && group.vpc !== defaultVpc(region)) return error(400, 'InvalidParameter', `Security group ${sg} and subnet subnet-0default belong to different networks.`)
        // "User data is limited to 16 KB, in raw form, before it is base64-encoded"; cloud-init decompresses gzip
        const raw = Buffer.from(p.get('UserData') ?? '', 'base64')
        if (raw.length > 16384) return error(400, 'InvalidParameterValue', 'User data is limited to 16384 bytes')
        const userData = raw[0] === 0x1f && raw[1] === 0x8b ? new TextDecoder().decode(gunzipSync(raw)) : raw.toString('utf8')
        const metadataOptions = { HttpTokens: p.get('MetadataOptions.HttpTokens') ?? 'optional', HttpPutResponseHopLimit: p.get('MetadataOptions.HttpPutResponseHopLimit') ?? '1', HttpEndpoint: p.get('MetadataOptions.HttpEndpoint') ?? 'enabled' }
        const tags = tagsFrom(p, 'instance')
        const id = `i-0${book.nextNumber().toString(16).padStart(16, '0')}`
        const dies = fake.failNextLaunch
        fake.failNextLaunch = null
        const m = book.add({ id, name: tags.Name ?? id, region, size: p.get('InstanceType')!, userData, labels: tags, extra: { clientToken: token, imageId: p.get('ImageId'), securityGroup: sg, reservationId: `r-0${id.slice(3)}`, signature, metadataOptions, userDataBytes: raw.length, ...(dies ? { dies } : {}) } })
        return xml(action, `<reservationId>${m.extra.reservationId}</reservationId><ownerId>123456789012</ownerId><groupSet/><instancesSet>${instanceXml(m)}</instancesSet>`)
      }
      case 'DescribeInstances': {
        const ids = list(p, 'InstanceId')
        const f = filters(p)
        const all: [FakeMachine, string?][] = [...book.shown().map((m) => [m] as [FakeMachine]), ...[...terminated.values()].map((m) => [m, 'terminated'] as [FakeMachine, string])]
        const missing = ids.find((id) => !all.some(([m]) => m.id === id && mine(m)))
        if (missing) return error(400, 'InvalidInstanceID.NotFound', `The instance ID '${missing}' does not exist`)
        const unknown = [...f.keys()].find((n) => !['client-token', 'instance-id', 'instance-state-name'].includes(n) && !n.startsWith('tag:'))
        if (unknown) return error(400, 'InvalidParameterValue', `The filter '${unknown}' is invalid`)
        const found = all.filter(
          ([m, st]) =>
            mine(m) &&
            (!ids.length || ids.includes(m.id)) &&
            [...f.entries()].every(([name, values]) => {
              if (name === 'client-token') return values.includes(m.extra.clientToken as string)
              if (name === 'instance-id') return values.includes(m.id)
              if (name === 'instance-state-name') return values.includes(st ?? stateOf(m))
              return values.includes(m.labels[name.slice(4)] ?? '\0')
            }),
        )
        return xml(action, reservation(found))
      }
      case 'TerminateInstances': {
        const id = p.get('InstanceId.1') ?? ''
        const m = book.machines.get(id)
        if (!m || !mine(m) || !book.visible(m)) return terminated.has(id) ? xml(action, `<instancesSet><item><instanceId>${id}</instanceId><currentState><code>48</code><name>terminated</name></currentState></item></instancesSet>`) : error(400, 'InvalidInstanceID.NotFound', `The instance ID '${id}' does not exist`)
        book.remove(id)
        m.extra.stateReason = { code: 'Client.UserInitiatedShutdown', message: 'Client.UserInitiatedShutdown: User initiated shutdown' }
        terminated.set(id, m)
        return xml(action, `<instancesSet><item><instanceId>${id}</instanceId><currentState><code>32</code><name>shutting-down</name></currentState><previousState><code>16</code><name>running</name></previousState></item></instancesSet>`)
      }
      default:
        return error(400, 'InvalidAction', `The action ${action} is not valid for this web service.`)
    }
  }
  const fake = Object.assign(
    serveFake({
      handle,
      // EC2 throttles with RequestLimitExceeded, HTTP 503 (https://docs.aws.amazon.com/ec2/latest/devguide/ec2-api-throttling.html).
      throttle: () => error(503, 'RequestLimitExceeded', 'Request limit exceeded.'),
      isCreate: (req, url, body) => req.method === 'POST' && url.pathname === '/' && new URLSearchParams(body).get('Action') === 'RunInstances',
    }),
    { groupLagMs: 0, failNextLaunch: null as AwsFake['failNextLaunch'], optedOut: false, deny: null as AwsFake['deny'], newImage: false, noDefaultVpc: false },
  )
  return Object.assign(fake, { accessKeyId, secretAccessKey, identity, groups, stsUrl: `${fake.url}/sts` })
}
