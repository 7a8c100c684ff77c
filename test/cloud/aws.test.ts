// AWS specifics: SigV4 against AWS's published example, refusals as EC2 sends
// them, the security group in the default VPC found by tag and repaired, the
// newest Ubuntu image for the architecture, ClientToken, sizes by architecture
// and regional offering, throttling by error code, TerminateInstances'
// NotFound checked by a describe, and keyless credentials (an assumed role,
// the environment, a web identity token file, the instance metadata service).
import { describe, expect, test } from 'bun:test'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { CLOSED } from '../../src/cloud/provider.ts'
import { signV4 } from '../../src/cloud/providers/aws-sigv4.ts'
import { AwsProvider } from '../../src/cloud/providers/aws.ts'
import { startAwsFake, type AwsFake } from '../fakes/aws.ts'
import { tmpDir } from '../helpers/tmp.ts'
import { ctx, FAST_RETRY } from './_ctx.ts'

const req = { region: 'eu-central-1', size: 't3.small', userData: '#cloud-config\n', role: 'general' as const, inbound: CLOSED }
const keys = (f: AwsFake) => ({ accessKeyId: f.accessKeyId, secretAccessKey: f.secretAccessKey })
const aws = (f: AwsFake, more: Parameters<typeof ctx>[1] = {}, region = 'eu-west-1') => new AwsProvider({ ...keys(f), region }, ctx({ aws: f.url, awsSts: f.stsUrl, awsImds: f.url }, more))

describe('aws', () => {
  test('SigV4 matches the example in AWS’s documentation', () => {
    const h = signV4({
      method: 'GET',
      url: new URL('https://iam.amazonaws.com/?Action=ListUsers&Version=2010-05-08'),
      headers: { 'content-type': 'application/x-www-form-urlencoded; charset=utf-8' },
      body: '',
      region: 'us-east-1',
      service: 'iam',
      accessKeyId: 'AKIDEXAMPLE',
      secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY',
      now: new Date('2015-08-30T12:36:00Z'),
    })
    expect(h).toEqual({
      'content-type': 'application/x-www-form-urlencoded; charset=utf-8',
      'x-amz-date': '20150830T123600Z',
      authorization: 'AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/iam/aws4_request, SignedHeaders=content-type;host;x-amz-date, Signature=5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7',
    })
  })

  test('an unknown key is AuthFailure; a wrong secret is SignatureDoesNotMatch', async () => {
    await using fake = startAwsFake()
    const unknown = new AwsProvider({ accessKeyId: 'AKIANOSUCHKEY0000000', secretAccessKey: fake.secretAccessKey }, ctx({ aws: fake.url }))
    await expect(unknown.validate()).rejects.toMatchObject({ code: 'cloud-credentials-refused', message: 'aws refused the credentials (401 AuthFailure: AWS was not able to validate the provided access credentials). To fix: check the access key and secret (or the ambient credentials).' })
    const wrong = new AwsProvider({ accessKeyId: fake.accessKeyId, secretAccessKey: 'x'.repeat(40) }, ctx({ aws: fake.url }))
    await expect(wrong.validate()).rejects.toMatchObject({ code: 'cloud-credentials-refused', detail: { providerStatus: 403, providerCode: 'SignatureDoesNotMatch' } })
  })

  test('create: newest Ubuntu image, a closed group in the default VPC found by its tag, ClientToken, base64 user data', async () => {
    await using fake = startAwsFake()
    const p = aws(fake)
    expect(await p.validate()).toEqual({ account: 'AKIA…MPLE (eu-west-1)' })
    expect((await p.regions()).find((r) => r.id === 'ap-southeast-2')).toEqual({ id: 'ap-southeast-2', name: 'ap-southeast-2', available: false })
    // a group of the same name in another VPC, and one in the default VPC without the tag, are not ours
    fake.groups.push({ id: 'sg-0othervpc00000000', name: 'muster-closed', region: 'eu-central-1', vpc: 'vpc-0other1', tags: { 'muster-group': 'muster-closed' }, ingress: ['tcp:22-22:0.0.0.0/0'], createdAt: 0 })
    const a = await p.createMachine({ ...req, name: 'w-a', requestId: 'prv-aaaaaaaaaaaa', role: 'build' })
    await p.createMachine({ ...req, name: 'w-b', requestId: 'prv-bbbbbbbbbbbb' })
    expect(a.id).toMatch(/^eu-central-1\/i-0[0-9a-f]{16}$/)
    const ours = fake.groups.filter((g) => g.vpc === 'vpc-0default1')
    expect(ours).toEqual([{ id: expect.stringMatching(/^sg-0/), name: 'muster-closed', region: 'eu-central-1', vpc: 'vpc-0default1', tags: { 'muster-group': 'muster-closed', 'managed-by': 'muster' }, ingress: [], createdAt: expect.any(Number) }])
    const [first, second] = fake.book.created
    expect(first!.extra).toMatchObject({ imageId: 'ami-0f9e8d7c6b5a49382', clientToken: 'prv-aaaaaaaaaaaa', securityGroup: ours[0]!.id })
    expect(second!.extra.securityGroup).toBe(ours[0]!.id)
    expect(first!.labels).toEqual({ Name: 'w-a', 'managed-by': 'muster', 'muster-request': 'prv-aaaaaaaaaaaa', 'muster-role': 'build' })
    // the same ClientToken with other parameters is refused by EC2 (IdempotentParameterMismatch), never doubled:
    // the instance holding the token is this request's, and is adopted
    expect((await p.createMachine({ ...req, name: 'w-a', userData: '#cloud-config\n# other\n', requestId: 'prv-aaaaaaaaaaaa', role: 'build' })).id).toBe(a.id)
    expect(fake.calls.filter((c) => c === 'POST /').length).toBeGreaterThan(0)
    // and with the same data it is the first instance again
    expect((await p.createMachine({ ...req, name: 'w-a', requestId: 'prv-aaaaaaaaaaaa', role: 'build' })).id).toBe(a.id)
    expect(fake.book.created).toHaveLength(2)
    // EC2 counts the user data before base64 (gzip here): what does not compress past 16,384 bytes is refused
    const noise = Buffer.from(crypto.getRandomValues(new Uint8Array(18_000))).toString('base64')
    await expect(p.createMachine({ ...req, name: 'w-c', userData: noise, requestId: 'prv-cccccccccccc' })).rejects.toMatchObject({ code: 'cloud-provider-error', detail: { providerCode: 'InvalidParameterValue' } })
  })

  test('openings: the Agent port from the Platform only, 22 from a CIDR; a drifted group is repaired', async () => {
    await using fake = startAwsFake()
    fake.groupLagMs = 150 // AuthorizeSecurityGroupIngress does not find the new group at first
    const p = aws(fake)
    const inbound = { agentFrom: '198.51.100.10/32', sshFrom: '192.0.2.0/24' }
    await p.createMachine({ ...req, name: 'w-o', requestId: 'prv-oooooooooooo', inbound })
    const g = fake.groups.find((x) => x.name !== 'muster-closed')!
    expect(g.ingress.sort()).toEqual(['tcp:22-22:192.0.2.0/24', 'tcp:7381-7381:198.51.100.10/32'])
    expect(fake.calls.filter((c) => c === 'POST /').length).toBeGreaterThan(0)
    // someone widened it and removed a rule: the next create puts it back as it should be
    g.ingress = ['tcp:7381-7381:0.0.0.0/0', 'tcp:22-22:192.0.2.0/24', '-1:-:0.0.0.0/0']
    await p.createMachine({ ...req, name: 'w-p', requestId: 'prv-pppppppppppp', inbound })
    expect(fake.groups.filter((x) => x.vpc === 'vpc-0default1')).toHaveLength(1)
    expect(g.ingress.sort()).toEqual(['tcp:22-22:192.0.2.0/24', 'tcp:7381-7381:198.51.100.10/32'])
  })

  test('throttling by error code: RequestLimitExceeded is waited out, even for a write', async () => {
    await using fake = startAwsFake()
    const p = aws(fake)
    fake.throttle(2, (_r, _u, body) => new URLSearchParams(body).get('Action') === 'CreateSecurityGroup')
    fake.throttle(1, (_r, _u, body) => new URLSearchParams(body).get('Action') === 'DescribeRegions')
    expect((await p.regions()).length).toBe(4)
    await p.createMachine({ ...req, name: 'w-t', requestId: 'prv-tttttttttttt' })
    expect(fake.throttled).toHaveLength(3)
    expect(fake.groups).toHaveLength(1)
  })

  test('sizes: only the binary’s architecture, only what the region offers', async () => {
    await using fake = startAwsFake()
    expect((await aws(fake).sizes('eu-central-1')).map((s) => s.id)).toEqual(['t3.micro', 't3.small', 't3.medium', 't3.large', 't3.xlarge', 'm6i.large', 'c6i.large'])
    expect((await aws(fake).sizes('eu-west-1')).map((s) => s.id)).not.toContain('c6i.large')
    const arm = aws(fake, { arch: 'arm64' })
    expect((await arm.sizes('eu-central-1')).map((s) => s.id)).toEqual(['t4g.micro', 't4g.small', 'm7g.large'])
    await arm.createMachine({ ...req, size: 't4g.small', name: 'w-arm', requestId: 'prv-armarmarmarm' })
    expect(fake.book.created[0]!.extra.imageId).toBe('ami-0aa0aa0aa0aa0aa01')
  })

  test('TerminateInstances right after a launch: NotFound is checked by a describe, and the instance still goes', async () => {
    await using fake = startAwsFake()
    fake.book.hiddenMs = 400 // EC2 does not know the new id yet
    // Backoffs of at least 50+100+200+200+200 ms: the id becomes known before muster's five describes are spent, however fast the machine.
    const p = aws(fake, { retry: { ...FAST_RETRY, baseMs: 100, capMs: 400 } })
    const m = await p.createMachine({ ...req, name: 'w-d', requestId: 'prv-dddddddddddd' })
    expect(await p.getMachine(m.id)).toBeNull()
    await p.deleteMachine(m.id)
    expect(fake.book.deleted).toEqual([m.id.split('/')[1]!])
    expect(fake.calls.length).toBeGreaterThan(4)
  })

  describe('keyless credentials', () => {
    test('{"roleArn","externalId"}: AssumeRole with the environment’s keys; no key is kept', async () => {
      await using fake = startAwsFake()
      const env = { AWS_ACCESS_KEY_ID: fake.accessKeyId, AWS_SECRET_ACCESS_KEY: fake.secretAccessKey }
      const role = (externalId?: string) => new AwsProvider({ roleArn: fake.identity.roleArn, ...(externalId ? { externalId } : {}), region: 'eu-central-1' }, ctx({ aws: fake.url, awsSts: fake.stsUrl }, { env }))
      await expect(role('wrong-external').validate()).rejects.toMatchObject({ code: 'cloud-refused', detail: { providerCode: 'AccessDenied' }, message: expect.stringContaining("the role's trust policy") })
      const p = role(fake.identity.externalId!)
      expect(await p.validate()).toEqual({ account: `${fake.identity.roleArn} (eu-central-1)` })
      await p.regions()
      expect(fake.identity.stsCalls).toEqual(['AssumeRole', 'AssumeRole'])
      // EC2 was called with the role's temporary keys, not the environment's
      expect([...fake.identity.keys.values()].filter((k) => k.who.includes('assumed-role'))).toHaveLength(1)
    })

    test('{"ambient":true}: a web identity token file, else the instance metadata service (IMDSv2); none is refused', async () => {
      await using fake = startAwsFake()
      using dir = tmpDir('muster-aws-wi-')
      const file = join(dir.path, 'token')
      writeFileSync(file, fake.identity.webIdentityToken)
      const ambient = (env: Record<string, string>) => new AwsProvider({ ambient: true, region: 'eu-central-1' }, ctx({ aws: fake.url, awsSts: fake.stsUrl, awsImds: fake.url }, { env }))
      expect(await ambient({ AWS_WEB_IDENTITY_TOKEN_FILE: file, AWS_ROLE_ARN: fake.identity.webRoleArn }).validate()).toEqual({ account: 'ambient credentials (eu-central-1)' })
      expect(fake.identity.stsCalls).toEqual(['AssumeRoleWithWebIdentity'])
      expect(await ambient({}).validate()).toEqual({ account: 'ambient credentials (eu-central-1)' })
      expect(fake.calls).toContain('PUT /latest/api/token')
      fake.identity.instanceRole = null
      await expect(ambient({}).validate()).rejects.toMatchObject({ code: 'cloud-credentials-refused', message: expect.stringContaining('no instance profile') })
      await expect(ambient({ AWS_EC2_METADATA_DISABLED: 'true' }).validate()).rejects.toMatchObject({ code: 'cloud-credentials-refused', message: expect.stringContaining('no ambient credentials') })
    })
  })
})
