// A local EC2 Query API: SigV4 checked the way AWS checks it (unknown key →
// 401 AuthFailure, wrong signature → 403 SignatureDoesNotMatch, stale date →
// 400 RequestExpired), XML answers and errors, Ubuntu images, the default
// VPC's security groups, RunInstances with ClientToken idempotency and the
// 16 KB user-data limit, pending → running, terminated instances that linger.
import { createHash, createHmac } from 'node:crypto'
import { serveFake, type FakeMachine, type FakeServer } from './common.ts'

const REGIONS = ['us-east-1', 'eu-central-1', 'eu-west-1', 'ap-southeast-2']
const TYPES: Record<string, [number, number]> = { 't3.micro': [2, 1024], 't3.small': [2, 2048], 't3.medium': [2, 4096], 't3.large': [2, 8192], 't3.xlarge': [4, 16384], 'm6i.large': [2, 8192], 'c6i.large': [2, 4096] }
const IMAGES = [
  { id: 'ami-0a1b2c3d4e5f60718', name: 'ubuntu/images/hvm-ssd-gp3/ubuntu-noble-24.04-amd64-server-20250110', date: '2025-01-10T00:00:00.000Z' },
  { id: 'ami-0f9e8d7c6b5a49382', name: 'ubuntu/images/hvm-ssd-gp3/ubuntu-noble-24.04-amd64-server-20250305', date: '2025-03-05T00:00:00.000Z' },
  { id: 'ami-0123456789abcdef0', name: 'ubuntu/images/hvm-ssd/ubuntu-jammy-22.04-amd64-server-20250101', date: '2025-01-01T00:00:00.000Z' },
]
const NS = 'http://ec2.amazonaws.com/doc/2016-11-15/'
const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;')
const xml = (action: string, inner: string) =>
  new Response(`<?xml version="1.0" encoding="UTF-8"?>\n<${action}Response xmlns="${NS}"><requestId>${crypto.randomUUID()}</requestId>${inner}</${action}Response>`, { headers: { 'content-type': 'text/xml;charset=UTF-8' } })
const error = (status: number, code: string, message: string) =>
  new Response(`<?xml version="1.0" encoding="UTF-8"?>\n<Response><Errors><Error><Code>${code}</Code><Message>${esc(message)}</Message></Error></Errors><RequestID>${crypto.randomUUID()}</RequestID></Response>`, { status, headers: { 'content-type': 'text/xml;charset=UTF-8' } })

const hex = (s: string) => createHash('sha256').update(s).digest('hex')
const mac = (k: string | Buffer, s: string) => createHmac('sha256', k).update(s).digest()

/** Recomputes the signature from what arrived; the refusal AWS would send, or null. */
function checkSignature(req: Request, url: URL, body: string, keys: Map<string, string>): { error: Response } | { region: string } {
  const auth = req.headers.get('authorization') ?? ''
  const m = auth.match(/^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/ec2\/aws4_request, SignedHeaders=([a-z0-9;-]+), Signature=([0-9a-f]{64})$/)
  if (!m) return { error: error(401, 'AuthFailure', 'AWS was not able to validate the provided access credentials') }
  const [, keyId, date, region, signed, signature] = m as unknown as string[]
  const secret = keys.get(keyId!)
  if (!secret) return { error: error(401, 'AuthFailure', 'AWS was not able to validate the provided access credentials') }
  if (!REGIONS.includes(region!)) return { error: error(401, 'AuthFailure', `Credential should be scoped to a valid region.`) }
  const amzDate = req.headers.get('x-amz-date') ?? ''
  const at = Date.parse(amzDate.replace(/^(\d{4})(\d\d)(\d\d)T(\d\d)(\d\d)(\d\d)Z$/, '$1-$2-$3T$4:$5:$6Z'))
  if (!Number.isFinite(at) || Math.abs(Date.now() - at) > 5 * 60_000 || !amzDate.startsWith(date!)) return { error: error(400, 'RequestExpired', `Request has expired. Timestamp date is ${amzDate}`) }
  const names = signed!.split(';')
  if (!names.includes('host') || !names.includes('x-amz-date')) return { error: error(403, 'SignatureDoesNotMatch', 'host and x-amz-date must be signed') }
  const canonical = [req.method, url.pathname || '/', '', names.map((n) => `${n}:${(req.headers.get(n) ?? '').trim()}\n`).join(''), signed, hex(body)].join('\n')
  const toSign = ['AWS4-HMAC-SHA256', amzDate, `${date}/${region}/ec2/aws4_request`, hex(canonical)].join('\n')
  const key = mac(mac(mac(mac(`AWS4${secret}`, date!), region!), 'ec2'), 'aws4_request')
  if (createHmac('sha256', key).update(toSign).digest('hex') !== signature) {
    return { error: error(403, 'SignatureDoesNotMatch', 'The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method. Consult the service documentation for details.') }
  }
  return { region: region! }
}

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

const glob = (pattern: string, s: string) => new RegExp(`^${pattern.split('*').map((x) => x.replace(/[.+?^${}()|[\]\\]/g, '\\$&')).join('.*')}$`).test(s)

export interface AwsFake extends FakeServer {
  accessKeyId: string
  secretAccessKey: string
  groups: { id: string; name: string; region: string; ingress: string[] }[]
}

export function startAwsFake(): AwsFake {
  const accessKeyId = 'AKIAIOSFODNN7EXAMPLE'
  const secretAccessKey = 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY'
  const keys = new Map([[accessKeyId, secretAccessKey]])
  const groups: AwsFake['groups'] = []
  const terminated = new Map<string, FakeMachine>()
  const instanceXml = (m: FakeMachine, state = m.running ? 'running' : 'pending') => {
    const code = { pending: 0, running: 16, 'shutting-down': 32, terminated: 48 }[state]
    return `<item><instanceId>${m.id}</instanceId><imageId>${m.extra.imageId}</imageId><instanceState><code>${code}</code><name>${state}</name></instanceState><instanceType>${m.size}</instanceType><clientToken>${esc(m.extra.clientToken as string)}</clientToken>${m.running && state === 'running' ? `<ipAddress>${m.address}</ipAddress>` : ''}<placement><availabilityZone>${m.region}a</availabilityZone></placement><tagSet>${Object.entries(m.labels).map(([k, v]) => `<item><key>${esc(k)}</key><value>${esc(v)}</value></item>`).join('')}</tagSet></item>`
  }
  const reservation = (ms: [FakeMachine, string?][]) => `<reservationSet>${ms.map(([m, st]) => `<item><reservationId>${m.extra.reservationId}</reservationId><ownerId>123456789012</ownerId><groupSet/><instancesSet>${instanceXml(m, st)}</instancesSet></item>`).join('')}</reservationSet>`

  const fake = serveFake(async (req, url) => {
    if (req.method !== 'POST' || url.pathname !== '/') return error(400, 'InvalidAction', 'The action is not valid for this web service.')
    const body = await req.text()
    const check = checkSignature(req, url, body, keys)
    if ('error' in check) return check.error
    const region = check.region
    const p = new URLSearchParams(body)
    const action = p.get('Action') ?? ''
    if (p.get('Version') !== '2016-11-15') return error(400, 'InvalidParameterValue', 'Version is required')
    const book = fake.book
    const mine = (m: FakeMachine) => m.region === region
    switch (action) {
      case 'DescribeRegions':
        return xml(action, `<regionInfo>${REGIONS.map((r) => `<item><regionName>${r}</regionName><regionEndpoint>ec2.${r}.amazonaws.com</regionEndpoint><optInStatus>${r === 'ap-southeast-2' ? 'not-opted-in' : 'opt-in-not-required'}</optInStatus></item>`).join('')}</regionInfo>`)
      case 'DescribeInstanceTypes': {
        const wanted = list(p, 'InstanceType')
        const bad = wanted.find((t) => !TYPES[t])
        if (bad) return error(400, 'InvalidInstanceType', `The following supplied instance types do not exist: [${bad}]`)
        return xml(action, `<instanceTypeSet>${wanted.map((t) => `<item><instanceType>${t}</instanceType><vCpuInfo><defaultVCpus>${TYPES[t]![0]}</defaultVCpus></vCpuInfo><memoryInfo><sizeInMiB>${TYPES[t]![1]}</sizeInMiB></memoryInfo></item>`).join('')}</instanceTypeSet>`)
      }
      case 'DescribeImages': {
        const f = filters(p)
        const owners = list(p, 'Owner')
        const found = IMAGES.filter((i) => (!owners.length || owners.includes('099720109477')) && (f.get('name') ?? ['*']).some((n) => glob(n, i.name)))
        return xml(action, `<imagesSet>${found.map((i) => `<item><imageId>${i.id}</imageId><name>${i.name}</name><imageState>available</imageState><creationDate>${i.date}</creationDate><imageOwnerId>099720109477</imageOwnerId></item>`).join('')}</imagesSet>`)
      }
      case 'DescribeSecurityGroups': {
        const names = filters(p).get('group-name')
        const found = groups.filter((g) => g.region === region && (!names || names.includes(g.name)))
        return xml(action, `<securityGroupInfo>${found.map((g) => `<item><groupId>${g.id}</groupId><groupName>${g.name}</groupName><vpcId>vpc-0default</vpcId></item>`).join('')}</securityGroupInfo>`)
      }
      case 'CreateSecurityGroup': {
        const name = p.get('GroupName') ?? ''
        if (!name || !p.get('GroupDescription')) return error(400, 'MissingParameter', 'The request must contain the parameter GroupName and GroupDescription')
        if (groups.some((g) => g.region === region && g.name === name)) return error(400, 'InvalidGroup.Duplicate', `The security group '${name}' already exists for VPC 'vpc-0default'`)
        const g = { id: `sg-0${crypto.randomUUID().replace(/-/g, '').slice(0, 16)}`, name, region, ingress: [] as string[] }
        groups.push(g)
        return xml(action, `<return>true</return><groupId>${g.id}</groupId>`)
      }
      case 'AuthorizeSecurityGroupIngress': {
        const g = groups.find((x) => x.id === p.get('GroupId') && x.region === region)
        if (!g) return error(400, 'InvalidGroup.NotFound', `The security group '${p.get('GroupId')}' does not exist`)
        g.ingress.push(`${p.get('IpPermissions.1.IpProtocol')}:${p.get('IpPermissions.1.FromPort')}-${p.get('IpPermissions.1.ToPort')}:${p.get('IpPermissions.1.IpRanges.1.CidrIp')}`)
        return xml(action, '<return>true</return>')
      }
      case 'RunInstances': {
        const token = p.get('ClientToken') ?? ''
        const same = [...book.machines.values(), ...terminated.values()].find((m) => m.extra.clientToken === token && token && mine(m))
        const signature = JSON.stringify([p.get('ImageId'), p.get('InstanceType'), p.get('UserData')])
        if (same) return same.extra.signature === signature ? xml(action, `<reservationId>${same.extra.reservationId}</reservationId><ownerId>123456789012</ownerId><groupSet/><instancesSet>${instanceXml(same)}</instancesSet>`) : error(400, 'IdempotentParameterMismatch', 'Arguments on this idempotent request are inconsistent with arguments used in previous request(s).')
        if (!TYPES[p.get('InstanceType') ?? '']) return error(400, 'InvalidParameterValue', `Invalid value '${p.get('InstanceType')}' for InstanceType.`)
        if (!IMAGES.some((i) => i.id === p.get('ImageId'))) return error(400, 'InvalidAMIID.NotFound', `The image id '[${p.get('ImageId')}]' does not exist`)
        const sg = p.get('SecurityGroupId.1')
        if (sg && !groups.some((g) => g.id === sg && g.region === region)) return error(400, 'InvalidGroup.NotFound', `The security group '${sg}' does not exist`)
        const userData = Buffer.from(p.get('UserData') ?? '', 'base64').toString('utf8')
        if (userData.length > 16384) return error(400, 'InvalidParameterValue', 'User data is limited to 16384 bytes')
        const tags: Record<string, string> = {}
        for (let i = 1; p.has(`TagSpecification.1.Tag.${i}.Key`); i++) tags[p.get(`TagSpecification.1.Tag.${i}.Key`)!] = p.get(`TagSpecification.1.Tag.${i}.Value`) ?? ''
        const id = `i-0${book.nextNumber().toString(16).padStart(16, '0')}`
        const m = book.add({ id, name: tags.Name ?? id, region, size: p.get('InstanceType')!, userData, labels: tags, extra: { clientToken: token, imageId: p.get('ImageId'), securityGroup: sg, reservationId: `r-0${id.slice(3)}`, signature } })
        return xml(action, `<reservationId>${m.extra.reservationId}</reservationId><ownerId>123456789012</ownerId><groupSet/><instancesSet>${instanceXml(m)}</instancesSet>`)
      }
      case 'DescribeInstances': {
        const ids = list(p, 'InstanceId')
        const f = filters(p)
        const all: [FakeMachine, string?][] = [...[...book.machines.values()].map((m) => [m] as [FakeMachine]), ...[...terminated.values()].map((m) => [m, 'terminated'] as [FakeMachine, string])]
        const missing = ids.find((id) => !all.some(([m]) => m.id === id && mine(m)))
        if (missing) return error(400, 'InvalidInstanceID.NotFound', `The instance ID '${missing}' does not exist`)
        const found = all.filter(([m]) => mine(m) && (!ids.length || ids.includes(m.id)) && (!f.has('client-token') || f.get('client-token')!.includes(m.extra.clientToken as string)))
        return xml(action, reservation(found))
      }
      case 'TerminateInstances': {
        const id = p.get('InstanceId.1') ?? ''
        const m = book.machines.get(id)
        if (!m || !mine(m)) return terminated.has(id) ? xml(action, `<instancesSet><item><instanceId>${id}</instanceId><currentState><code>48</code><name>terminated</name></currentState></item></instancesSet>`) : error(400, 'InvalidInstanceID.NotFound', `The instance ID '${id}' does not exist`)
        book.remove(id)
        terminated.set(id, m)
        return xml(action, `<instancesSet><item><instanceId>${id}</instanceId><currentState><code>32</code><name>shutting-down</name></currentState><previousState><code>16</code><name>running</name></previousState></item></instancesSet>`)
      }
      default:
        return error(400, 'InvalidAction', `The action ${action} is not valid for this web service.`)
    }
  })
  return Object.assign(fake, { accessKeyId, secretAccessKey, groups })
}
