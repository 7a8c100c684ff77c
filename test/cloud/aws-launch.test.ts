// AWS, round three, against a fake that behaves as EC2 documents: user data
// counted before base64 (16,384 bytes) with room to spare at the longest name
// and URL; IMDSv2 only, one hop; a launch that EC2 terminates says why at
// once; the image and group pinned with the sealed first-boot record, and an
// IdempotentParameterMismatch adopted; refusals that will not pass by
// themselves fail at once and name the fix; credentials as the SDKs take them.
import { describe, expect, test } from 'bun:test'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { awsUrl, CLOSED, endpointsFromEnv, parseCredentials } from '../../src/cloud/provider.ts'
import { AwsProvider, awsUserData } from '../../src/cloud/providers/aws.ts'
import { cloudOf } from '../../src/cloud/service.ts'
import { firstBootData } from '../../src/cloud/user-data.ts'
import { startAwsFake, type AwsFake } from '../fakes/aws.ts'
import { readFirstBoot } from '../fakes/first-boot.ts'
import { startListenerPlatform } from '../helpers/node-side.ts'
import { tmpDir, waitFor } from '../helpers/tmp.ts'
import { ctx, FAST_RETRY } from './_ctx.ts'

const req = { region: 'eu-central-1', size: 't3.small', userData: '#cloud-config\n', role: 'general' as const, inbound: CLOSED }
const aws = (f: AwsFake, more: Parameters<typeof ctx>[1] = {}) => new AwsProvider({ accessKeyId: f.accessKeyId, secretAccessKey: f.secretAccessKey, region: 'eu-central-1' }, ctx({ aws: f.url, awsSts: f.stsUrl, awsImds: f.url, awsContainer: f.url }, more))

/** The largest first-boot data muster writes: a 63-character name, a 253-character host name in both URLs, the pin, --probe with an address, --allow-ssh-inbound. */
function longest(): string {
  const host = `${'a'.repeat(61)}.${'b'.repeat(61)}.${'c'.repeat(61)}.${'d'.repeat(57)}.example`.slice(0, 253)
  return firstBootData({
    provider: 'aws',
    nodeId: `n${'x'.repeat(61)}9`,
    token: `mjt_${'a'.repeat(16)}.${'A'.repeat(43)}`,
    enrollmentUrl: `https://${host}:65535`,
    fingerprint: `sha256:${'a'.repeat(64)}`,
    binaryUrl: `https://${host}:65535/api/v1/cloud/binary`,
    binarySha256: 'b'.repeat(64),
    binaryPin: `sha256:${'c'.repeat(64)}`,
    role: 'general',
    probe: true,
    address: '203.0.113.254',
    ssh: true,
  })
}

async function platform(credentials?: Record<string, unknown>) {
  const fake = startAwsFake()
  const p = await startListenerPlatform()
  const cloud = cloudOf(p.platform)
  cloud.binary = { url: 'https://releases.example/muster', sha256: 'ef'.repeat(32) }
  cloud.retry = FAST_RETRY
  cloud.endpoints.aws = fake.url
  cloud.endpoints.awsSts = fake.stsUrl
  await p.client.cloud.connect('aws', credentials ?? { access_key_id: fake.accessKeyId, secret_access_key: fake.secretAccessKey, region: 'eu-central-1' })
  return {
    fake,
    p,
    cloud,
    provision: (name: string, region = 'eu-central-1') => p.client.cloud.provision({ provider: 'aws', name, region, size: 't3.small' }),
    info: (id: string) => p.client.cloud.provisionInfo(id),
    async [Symbol.asyncDispose]() {
      await p.close()
      await fake.stop()
    },
  }
}

describe('aws, round three', () => {
  test('user data: the longest first-boot data fits EC2’s 16,384 bytes before base64 with at least 4 KB to spare, and boots as written', async () => {
    const text = longest()
    expect(Buffer.byteLength(text)).toBeGreaterThan(16_384 - 4096) // as plain text it would leave less than 4 KB
    const sent = awsUserData(text)
    expect(sent.length).toBeLessThanOrEqual(16_384 - 4096)
    console.log(`first-boot data at the longest name and URL: ${Buffer.byteLength(text)} bytes of cloud-config, ${sent.length} bytes gzipped (${16_384 - sent.length} to spare)`)
    await using fake = startAwsFake()
    const m = await aws(fake).createMachine({ ...req, userData: text, name: 'w-long', requestId: 'prv-longlonglong' })
    expect(m.status).toBe('pending')
    const made = fake.book.created[0]!
    expect(made.extra.userDataBytes).toBe(sent.length)
    // cloud-init reads the gzip: the machine sees exactly the cloud-config
    expect(made.userData).toBe(text)
    expect(readFirstBoot(made.userData).env.MUSTER_NODE_ID).toBe(`n${'x'.repeat(61)}9`)
  })

  test('IMDSv2 only, hop limit 1: RunInstances sends MetadataOptions HttpTokens=required, HttpPutResponseHopLimit=1', async () => {
    await using fake = startAwsFake()
    await aws(fake).createMachine({ ...req, name: 'w-imds', requestId: 'prv-imdsimdsimds' })
    expect(fake.book.created[0]!.extra.metadataOptions).toEqual({ HttpTokens: 'required', HttpPutResponseHopLimit: '1', HttpEndpoint: 'enabled' })
    // and the instance EC2 describes says so
    const r = await aws(fake).call('eu-central-1', 'DescribeInstances', { 'InstanceId.1': fake.book.created[0]!.id })
    expect(JSON.stringify(r)).toContain('"required"')
  })

  test('a launch EC2 terminates (no capacity) fails the provision on the first reconcile, with EC2’s code and message; its token is revoked', async () => {
    await using t = await platform()
    t.fake.book.bootMs = 100
    t.fake.failNextLaunch = { code: 'Server.InsufficientInstanceCapacity', message: 'Server.InsufficientInstanceCapacity: Insufficient capacity.' }
    const prv = await t.provision('aws-dies')
    expect(prv.state).toBe('booting')
    expect(readFirstBoot(t.fake.book.created[0]!.userData).token).toBeUndefined()
    await waitFor(() => Date.now() - t.fake.book.created[0]!.createdAt > 150, { what: 'the launch to die' })
    await t.cloud.provisioner.reconcile()
    const row = await t.p.platform.store.get<{ state: string; reason: string }>('SELECT state, reason FROM cloud_provisions WHERE id = ?1', prv.id)
    expect(row).toEqual({ state: 'failed', reason: 'the machine is terminated at aws: Server.InsufficientInstanceCapacity: Insufficient capacity.' })
    expect(await t.info(prv.id)).toMatchObject({ state: 'failed', machineId: `eu-central-1/${t.fake.book.created[0]!.id}` })
    // the machine it expected is expected no more: its identity document would join nothing
    expect(await t.p.platform.store.get('SELECT revoked_at IS NOT NULL AS revoked FROM cloud_expected_machines WHERE node_name = ?1', 'aws-dies')).toEqual({ revoked: 1 })
  })

  test('a lost launch answer, then EC2 terminates it: the retry (same ClientToken) answers the dead instance and the provision fails at once, the dead one recorded', async () => {
    await using t = await platform()
    t.fake.book.bootMs = 50
    t.fake.book.hiddenMs = 60_000 // EC2 does not list it yet
    t.fake.failNextLaunch = { code: 'Client.VolumeLimitExceeded', message: 'Client.VolumeLimitExceeded: Volume limit exceeded' }
    t.fake.loseCreates(FAST_RETRY.attempts)
    const prv = await t.provision('aws-lost-dies')
    expect(prv).toMatchObject({ state: 'creating', reason: expect.stringContaining('will retry') })
    await Bun.sleep(120)
    t.fake.book.hiddenMs = 0
    // one reconcile (read from the store: a status read would reconcile again)
    await t.cloud.provisioner.reconcile()
    const row = await t.p.platform.store.get<{ state: string; machine_id: string; reason: string }>('SELECT state, machine_id, reason FROM cloud_provisions WHERE id = ?1', prv.id)
    expect(row).toEqual({ state: 'failed', machine_id: `eu-central-1/${t.fake.book.created[0]!.id}`, reason: 'the machine is terminated at aws: Client.VolumeLimitExceeded: Volume limit exceeded' })
    expect(t.fake.book.created).toHaveLength(1)
    // a new provision of the name has a new request id: a fresh ClientToken, a new instance
    const again = await t.provision('aws-lost-dies')
    expect(again.id).not.toBe(prv.id)
    expect(t.fake.book.created).toHaveLength(2)
    expect(t.fake.book.created[1]!.extra.clientToken).toBe(again.id)
  })

  test('a new Canonical image between a lost answer and its retry: the retry launches with the pinned image and group, and EC2 answers the first instance', async () => {
    await using t = await platform()
    t.fake.book.hiddenMs = 60_000
    t.fake.loseCreates(FAST_RETRY.attempts)
    const prv = await t.provision('aws-pinned')
    expect(prv.state).toBe('creating')
    t.fake.newImage = true // published meanwhile: the newest image now
    await t.cloud.provisioner.reconcile()
    expect((await t.info(prv.id)).state).toMatch(/^(booting|enrolling)$/)
    expect(t.fake.book.created).toHaveLength(1)
    const images = new Set(t.fake.createBodies.map((b) => new URLSearchParams(b).get('ImageId')))
    expect(images).toEqual(new Set(['ami-0f9e8d7c6b5a49382']))
    // the pins are sealed with the first-boot data, never in the clear
    const sealed = (await t.p.platform.store.get<{ first_boot: Uint8Array }>('SELECT first_boot FROM cloud_provisions WHERE id = ?1', prv.id))!.first_boot
    expect(Buffer.from(sealed).toString('latin1')).not.toContain('ami-0f9e8d7c6b5a49382')
  })

  test('IdempotentParameterMismatch: the instance holding the ClientToken is looked up and adopted, not a final refusal', async () => {
    await using fake = startAwsFake()
    const p = aws(fake)
    const first = await p.createMachine({ ...req, name: 'w-m', requestId: 'prv-mismatchmism' })
    fake.newImage = true
    const again = await p.createMachine({ ...req, name: 'w-m', requestId: 'prv-mismatchmism', pins: { imageId: 'ami-0bbbbbbbbbbbbbbb1' } })
    expect(again.id).toBe(first.id)
    expect(fake.book.created).toHaveLength(1)
  })

  test('refusals that do not pass by themselves fail the provision at once and name the fix; an unknown or disabled region is refused before anything is ordered', async () => {
    await using t = await platform()
    t.fake.noDefaultVpc = true
    const novpc = await t.provision('aws-novpc')
    expect(novpc).toMatchObject({ state: 'failed', reason: expect.stringContaining('create one (aws ec2 create-default-vpc --region eu-central-1)') })
    t.fake.noDefaultVpc = false
    t.fake.deny = { who: ':user/', actions: ['RunInstances'] }
    const denied = await t.provision('aws-denied')
    expect(denied).toMatchObject({ state: 'failed', reason: expect.stringMatching(/credentials lack a permission \(403 UnauthorizedOperation: .*ec2:RunInstances.*To fix: give the credentials the EC2 permissions/) })
    expect((await t.p.client.nodes.list()).pendingEnrollments).toEqual([])
    await expect(t.provision('aws-nowhere', 'xx-nowhere-1')).rejects.toMatchObject({ code: 'invalid-request', message: expect.stringContaining('muster cloud regions --provider aws') })
    await expect(t.provision('aws-optin', 'ap-southeast-2')).rejects.toMatchObject({ code: 'cloud-refused', message: expect.stringContaining('opt in') })
    expect((await t.p.client.cloud.provisions()).provisions.map((x) => x.name).sort()).toEqual(['aws-denied', 'aws-novpc'])
    // an account not signed up is 401 OptInRequired: a refusal naming the fix, not "bad credentials"
    t.fake.optedOut = true
    await expect(t.p.client.cloud.regions('aws')).rejects.toMatchObject({ code: 'cloud-refused', message: expect.stringContaining('OptInRequired') })
  })

  describe('credentials', () => {
    test('a stored key with roleArn assumes the role with that key (which may call nothing else); EC2 is called as the role', async () => {
      await using fake = startAwsFake()
      fake.deny = { who: ':user/', actions: ['DescribeRegions', 'DescribeInstances', 'RunInstances'] }
      const stored = parseCredentials('aws', JSON.stringify({ access_key_id: fake.accessKeyId, secret_access_key: fake.secretAccessKey, role_arn: fake.identity.roleArn, external_id: fake.identity.externalId, region: 'eu-central-1' }))
      expect(stored).toMatchObject({ accessKeyId: fake.accessKeyId, roleArn: fake.identity.roleArn, externalId: fake.identity.externalId })
      const p = new AwsProvider(stored as never, ctx({ aws: fake.url, awsSts: fake.stsUrl }, { env: {} }))
      expect(await p.validate()).toEqual({ account: `${fake.identity.roleArn} via AKIA…MPLE (eu-central-1)` })
      expect(fake.identity.stsCalls).toEqual(['AssumeRole'])
      // the key alone may not call EC2
      await expect(aws(fake).validate()).rejects.toMatchObject({ code: 'cloud-refused', detail: { providerCode: 'UnauthorizedOperation' } })
    })

    test('ambient: container credentials (ECS relative URI; EKS Pod Identity full URI with its token file)', async () => {
      await using fake = startAwsFake()
      using dir = tmpDir('muster-aws-pod-')
      const ambient = (env: Record<string, string>) => new AwsProvider({ ambient: true, region: 'eu-central-1' }, ctx({ aws: fake.url, awsImds: fake.url, awsContainer: fake.url }, { env: { AWS_EC2_METADATA_DISABLED: 'true', ...env } }))
      expect(await ambient({ AWS_CONTAINER_CREDENTIALS_RELATIVE_URI: fake.identity.containerRelativeUri }).validate()).toEqual({ account: 'ambient credentials (eu-central-1)' })
      const file = join(dir.path, 'eks-pod-identity-token')
      writeFileSync(file, `${fake.identity.podIdentityToken}\n`)
      expect(await ambient({ AWS_CONTAINER_CREDENTIALS_FULL_URI: `${fake.url}/v1/credentials`, AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE: file }).validate()).toEqual({ account: 'ambient credentials (eu-central-1)' })
      writeFileSync(file, 'another-pod')
      await expect(ambient({ AWS_CONTAINER_CREDENTIALS_FULL_URI: `${fake.url}/v1/credentials`, AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE: file }).validate()).rejects.toMatchObject({ code: 'cloud-credentials-refused', message: expect.stringContaining('AccessDeniedException') })
      // plain http only to this machine or the container endpoints (the keys would cross the network in the clear)
      await expect(ambient({ AWS_CONTAINER_CREDENTIALS_FULL_URI: 'http://198.51.100.7/creds' }).validate()).rejects.toMatchObject({ code: 'cloud-credentials-refused', message: expect.stringContaining('must be https') })
    })

    test('ambient: an IMDSv2 token PUT that gets no answer says "hop limit?"', async () => {
      await using fake = startAwsFake()
      fake.identity.imdsHopLimit = true
      const p = new AwsProvider({ ambient: true, region: 'eu-central-1' }, ctx({ aws: fake.url, awsImds: fake.url }, { env: {} }))
      await expect(p.validate()).rejects.toMatchObject({ code: 'cloud-credentials-refused', message: expect.stringContaining('hop limit?') })
    })

    test('endpoints: AWS_ENDPOINT_URL_EC2 / AWS_ENDPOINT_URL (and _STS); each region’s own otherwise, amazonaws.com.cn in China', () => {
      expect(endpointsFromEnv({ AWS_ENDPOINT_URL: 'http://127.0.0.1:4566' })).toMatchObject({ aws: 'http://127.0.0.1:4566', awsSts: 'http://127.0.0.1:4566' })
      expect(endpointsFromEnv({ AWS_ENDPOINT_URL: 'http://127.0.0.1:4566', AWS_ENDPOINT_URL_EC2: 'https://ec2.example.internal', AWS_ENDPOINT_URL_STS: 'https://sts.example.internal' })).toMatchObject({ aws: 'https://ec2.example.internal', awsSts: 'https://sts.example.internal' })
      expect(endpointsFromEnv({ MUSTER_CLOUD_AWS_URL: 'http://127.0.0.1:1', AWS_ENDPOINT_URL_EC2: 'https://ec2.example.internal' }).aws).toBe('http://127.0.0.1:1')
      expect(() => endpointsFromEnv({ AWS_ENDPOINT_URL: 'http://ec2.example.internal' })).toThrow('AWS_ENDPOINT_URL must be an https URL')
      expect(endpointsFromEnv({})).toMatchObject({ aws: null, awsSts: null })
      expect(awsUrl('ec2', 'eu-central-1')).toBe('https://ec2.eu-central-1.amazonaws.com')
      expect(awsUrl('ec2', 'cn-north-1')).toBe('https://ec2.cn-north-1.amazonaws.com.cn')
      expect(awsUrl('sts', 'cn-northwest-1')).toBe('https://sts.cn-northwest-1.amazonaws.com.cn')
      expect(parseCredentials('aws', JSON.stringify({ role_arn: 'arn:aws-cn:iam::123456789012:role/muster', region: 'cn-north-1' }))).toEqual({ roleArn: 'arn:aws-cn:iam::123456789012:role/muster', region: 'cn-north-1' })
    })
  })
})
