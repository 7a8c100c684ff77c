// The metadata fakes behave as each cloud documents, so a node that works
// against them asks the way the real services require.
import { describe, expect, test } from 'bun:test'
import { metadataHandler } from '../../fakes/metadata.ts'
import { makeCert } from '../../fakes/identity-sign.ts'

const signer = makeCert({ cn: 'signer' })
const pem = { certPem: signer.pem, keyPem: signer.keyPem }
const ask = (h: ReturnType<typeof metadataHandler>, path: string, init: RequestInit = {}, peer = '127.0.0.1') => h(new Request(`http://169.254.169.254${path}`, init), peer)

describe('metadata fakes', () => {
  test('aws: IMDSv2 only (a session token from a PUT with a TTL), X-Forwarded-For refused, and no answer beyond the hop limit', async () => {
    const h = metadataHandler({ cloud: 'aws', signer: pem, aws: { document: { instanceId: 'i-0abc' } } }, (peer) => peer === '127.0.0.1')
    expect((await ask(h, '/latest/dynamic/instance-identity/rsa2048')).status).toBe(401)
    expect((await ask(h, '/latest/api/token', { method: 'PUT' })).status).toBe(400)
    expect((await ask(h, '/latest/api/token', { method: 'PUT', headers: { 'x-aws-ec2-metadata-token-ttl-seconds': '60', 'x-forwarded-for': '10.0.0.5' } })).status).toBe(403)
    const beyond = await Promise.race([ask(h, '/latest/api/token', { method: 'PUT', headers: { 'x-aws-ec2-metadata-token-ttl-seconds': '60' } }, '172.17.0.2'), Bun.sleep(300).then(() => 'no answer')])
    expect(beyond).toBe('no answer')
    const token = await (await ask(h, '/latest/api/token', { method: 'PUT', headers: { 'x-aws-ec2-metadata-token-ttl-seconds': '60' } })).text()
    const doc = await ask(h, '/latest/dynamic/instance-identity/rsa2048', { headers: { 'x-aws-ec2-metadata-token': token } })
    expect(doc.status).toBe(200)
    expect(await doc.text()).toMatch(/^MIAGCSqGSIb3DQEHAqCAMIACAQEx/)
  })

  test('gcp: Metadata-Flavor: Google required, an audience required, format=full adds the compute_engine claims', async () => {
    const h = metadataHandler({ cloud: 'gcp', signer: pem, gcp: { kid: 'k', email: 'e@x', computeEngine: { instance_id: '1' } } })
    const path = '/computeMetadata/v1/instance/service-accounts/default/identity'
    expect((await ask(h, `${path}?audience=a`)).status).toBe(403)
    expect((await ask(h, path, { headers: { 'metadata-flavor': 'Google' } })).status).toBe(400)
    const claims = (q: string) => ask(h, `${path}?${q}`, { headers: { 'metadata-flavor': 'Google' } }).then(async (r) => JSON.parse(Buffer.from((await r.text()).split('.')[1]!, 'base64url').toString()) as Record<string, unknown>)
    expect(await claims('audience=https://p:7443')).not.toHaveProperty('google')
    expect(await claims('audience=https://p:7443&format=full')).toMatchObject({ aud: 'https://p:7443', google: { compute_engine: { instance_id: '1' } } })
  })

  test('azure: Metadata: true and an api-version required; the nonce signed as given, at most 32 letters and digits', async () => {
    const h = metadataHandler({ cloud: 'azure', signer: pem, bag: [signer.pem], azure: { vmId: '11111111-2222-3333-4444-555555555555', subscriptionId: '00000000-1111-2222-3333-444444444444' } })
    expect((await ask(h, '/metadata/attested/document?api-version=2025-04-07&nonce=abc')).status).toBe(400)
    expect((await ask(h, '/metadata/attested/document?nonce=abc', { headers: { metadata: 'true' } })).status).toBe(400)
    expect((await ask(h, `/metadata/attested/document?api-version=2025-04-07&nonce=${'x'.repeat(33)}`, { headers: { metadata: 'true' } })).status).toBe(400)
    const r = (await (await ask(h, '/metadata/attested/document?api-version=2025-04-07&nonce=abc123', { headers: { metadata: 'true' } })).json()) as { encoding: string; signature: string }
    expect(r.encoding).toBe('pkcs7')
    expect(Buffer.from(r.signature, 'base64').toString('latin1')).toContain('"nonce":"abc123"')
  })
})
