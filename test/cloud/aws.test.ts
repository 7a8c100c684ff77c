// AWS specifics: SigV4 against AWS's published example, refusals as EC2 sends
// them, the shared Agent security group, the newest Ubuntu image, ClientToken.
import { describe, expect, test } from 'bun:test'
import { signV4 } from '../../src/cloud/providers/aws-sigv4.ts'
import { AwsProvider } from '../../src/cloud/providers/aws.ts'
import { startAwsFake } from '../fakes/aws.ts'

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
    const unknown = new AwsProvider({ accessKeyId: 'AKIANOSUCHKEY0000000', secretAccessKey: fake.secretAccessKey }, fake.url)
    await expect(unknown.validate()).rejects.toMatchObject({ code: 'cloud-credentials-refused', message: 'aws refused the credentials (401 AuthFailure: AWS was not able to validate the provided access credentials).' })
    const wrong = new AwsProvider({ accessKeyId: fake.accessKeyId, secretAccessKey: 'x'.repeat(40) }, fake.url)
    await expect(wrong.validate()).rejects.toMatchObject({ code: 'cloud-credentials-refused', detail: { providerStatus: 403, providerCode: 'SignatureDoesNotMatch' } })
  })

  test('create: newest Ubuntu 24.04 image, one shared group opening only the Agent port, ClientToken, base64 user data', async () => {
    await using fake = startAwsFake()
    const aws = new AwsProvider({ accessKeyId: fake.accessKeyId, secretAccessKey: fake.secretAccessKey, region: 'eu-west-1' }, fake.url)
    expect(await aws.validate()).toEqual({ account: 'AKIA…MPLE (eu-west-1)' })
    expect((await aws.regions()).find((r) => r.id === 'ap-southeast-2')).toEqual({ id: 'ap-southeast-2', name: 'ap-southeast-2', available: false })
    const a = await aws.createMachine({ name: 'w-a', region: 'eu-central-1', size: 't3.small', userData: '#cloud-config\n', requestId: 'prv-aaaaaaaaaaaa', role: 'build' })
    await aws.createMachine({ name: 'w-b', region: 'eu-central-1', size: 't3.small', userData: '#cloud-config\n', requestId: 'prv-bbbbbbbbbbbb', role: 'general' })
    expect(a.id).toMatch(/^eu-central-1\/i-0[0-9a-f]{16}$/)
    expect(fake.groups).toEqual([{ id: expect.stringMatching(/^sg-0/), name: 'muster-agent', region: 'eu-central-1', ingress: ['tcp:7381-7381:0.0.0.0/0'] }])
    const [first, second] = fake.book.created
    expect(first!.extra).toMatchObject({ imageId: 'ami-0f9e8d7c6b5a49382', clientToken: 'prv-aaaaaaaaaaaa', securityGroup: fake.groups[0]!.id })
    expect(second!.extra.securityGroup).toBe(fake.groups[0]!.id)
    expect(first!.labels).toEqual({ Name: 'w-a', 'managed-by': 'muster', 'muster-request': 'prv-aaaaaaaaaaaa', 'muster-role': 'build' })
    // the same ClientToken with other arguments is refused by EC2, not silently doubled
    await expect(aws.createMachine({ name: 'w-a', region: 'eu-central-1', size: 't3.large', userData: '#cloud-config\n', requestId: 'prv-aaaaaaaaaaaa', role: 'build' })).rejects.toMatchObject({ detail: { providerCode: 'IdempotentParameterMismatch' } })
    expect(fake.book.created).toHaveLength(2)
    // user data over EC2's 16 KB is refused by the API
    await expect(aws.createMachine({ name: 'w-c', region: 'eu-central-1', size: 't3.small', userData: 'x'.repeat(17000), requestId: 'prv-cccccccccccc', role: 'general' })).rejects.toMatchObject({ code: 'cloud-provider-error' })
  })
})
