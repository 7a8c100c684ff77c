// The verifiers and their roots on their own: what ships in the binary, what
// --cloud-identity-roots adds (and the file's mistakes, named), Google's keys
// kept as long as their Expires says, Azure's time format.
import { describe, expect, test } from 'bun:test'
import { writeFileSync } from 'node:fs'
import { X509Certificate } from 'node:crypto'
import { verifyAwsDocument } from '../../../src/cloud/identity/aws.ts'
import { azureTime } from '../../../src/cloud/identity/azure.ts'
import { cacheFor, GoogleKeys, verifyGcpToken } from '../../../src/cloud/identity/gcp.ts'
import { builtinRoots, identityRoots } from '../../../src/cloud/identity/roots.ts'
import { IdentityRefused } from '../../../src/fabric/identity-join.ts'
import { base64Lines, makeCert, signAwsBer, signGcpToken } from '../../fakes/identity-sign.ts'
import { tmpDir } from '../../helpers/tmp.ts'
import { startGoogleCerts } from './_clouds.ts'

describe('verification roots', () => {
  test("AWS's RSA-2048 certificate ships for every commercial region (and GovCloud, China); Microsoft's roots ship", () => {
    const r = builtinRoots()
    for (const region of ['us-east-1', 'eu-central-1', 'ap-southeast-2', 'sa-east-1', 'us-gov-west-1', 'cn-north-1']) {
      const c = new X509Certificate(Buffer.from(r.aws.get(region)!))
      expect(c.subject).toContain('Amazon Web Services LLC')
      expect(c.publicKey.asymmetricKeyDetails?.modulusLength).toBe(2048)
    }
    expect(r.aws.size).toBeGreaterThanOrEqual(38)
    expect(r.azure.map((c) => c.subject.split('\n').find((l) => l.startsWith('CN='))).sort()).toEqual(['CN=DigiCert Global Root CA', 'CN=DigiCert Global Root G2', 'CN=Microsoft TLS RSA Root G2', 'CN=Microsoft TLS RSA Root G2'])
  })

  test('a roots file adds regions, key ids and roots; its mistakes are named', () => {
    using dir = tmpDir('muster-roots-')
    const c = makeCert({ cn: 'private region' })
    const f = `${dir.path}/roots.json`
    writeFileSync(f, JSON.stringify({ aws: { 'eu-private-1': c.pem }, gcp: { k1: c.pem }, azure: [c.pem] }))
    const r = identityRoots(f)
    expect(Buffer.from(r.aws.get('eu-private-1')!).equals(Buffer.from(c.der))).toBe(true)
    expect(r.gcp.get('k1')).toBe(c.pem)
    expect(r.azure).toHaveLength(5)
    const bad = (content: string) => {
      writeFileSync(f, content)
      return () => identityRoots(f)
    }
    expect(bad('{')).toThrow('cannot be read as JSON')
    expect(bad('{"aws": {"nowhere": "x"}}')).toThrow('aws region "nowhere" is not a region name')
    expect(bad('{"aws": {"eu-west-9": "not a pem"}}')).toThrow('aws.eu-west-9 is not a PEM certificate')
    expect(bad('{"gpc": {}}')).toThrow('unknown key "gpc"')
    expect(bad('{"azure": {}}')).toThrow('"azure" is not a list')
  })
})

describe('AWS', () => {
  test('a region without a certificate is refused, fail closed', () => {
    const c = makeCert({ cn: 'r' })
    const doc = base64Lines(signAwsBer({ content: new TextEncoder().encode('{}'), signer: c }))
    expect(() => verifyAwsDocument(doc, 'xx-nowhere-1', builtinRoots().aws)).toThrow(IdentityRefused)
    expect(() => verifyAwsDocument(doc, 'xx-nowhere-1', builtinRoots().aws)).toThrow('identity: unknown region xx-nowhere-1')
  })
})

describe('GCP', () => {
  test("Google's certificates are fetched once and kept until their Expires; an unknown key id is looked up again at most once a minute", async () => {
    const key = makeCert({ cn: 'google' })
    const google = startGoogleCerts({ kid1: key.pem }, 3600)
    let now = Date.now()
    const keys = new GoogleKeys(new Map(), google.url, () => now)
    try {
      expect(await keys.get('kid1')).toBe(key.pem)
      expect(await keys.get('kid1')).toBe(key.pem)
      expect(google.fetches()).toBe(1)
      // a key id not seen yet (Google rotated): not fetched again within the minute
      expect(await keys.get('rotated')).toBeNull()
      expect(google.fetches()).toBe(1)
      now += 61_000
      expect(await keys.get('rotated')).toBeNull()
      expect(google.fetches()).toBe(2)
      // past the Expires of the last answer: fetched again
      now += 3600_000
      expect(await keys.get('kid1')).toBe(key.pem)
      expect(google.fetches()).toBe(3)
      const token = await signGcpToken(key, 'kid1', { iss: 'https://accounts.google.com', aud: 'https://p.example:7443', google: { compute_engine: { instance_id: '42', instance_name: 'n', project_id: 'p', zone: 'z', instance_creation_timestamp: 1 } } })
      expect(await verifyGcpToken(token, keys, 'https://p.example:7443', Date.now())).toEqual({ instanceId: '42', instanceName: 'n', projectId: 'p', zone: 'z', createdAt: 1000 })
    } finally {
      google.stop()
    }
  })

  test('cache lifetimes: max-age, else Expires, else an hour; never more than a day', () => {
    const now = Date.parse('2026-01-01T00:00:00Z')
    expect(cacheFor(new Headers({ 'cache-control': 'public, max-age=19845' }), now)).toBe(19_845_000)
    expect(cacheFor(new Headers({ expires: 'Thu, 01 Jan 2026 02:00:00 GMT' }), now)).toBe(7_200_000)
    expect(cacheFor(new Headers(), now)).toBe(3_600_000)
    expect(cacheFor(new Headers({ 'cache-control': 'max-age=9999999' }), now)).toBe(86_400_000)
  })
})

describe('Azure', () => {
  test('times as Azure writes them', () => {
    expect(new Date(azureTime('11/20/18 22:07:39 -0000')).toISOString()).toBe('2018-11-20T22:07:39.000Z')
    expect(new Date(azureTime('01/02/26 03:04:05 +0100')).toISOString()).toBe('2026-01-02T02:04:05.000Z')
    expect(azureTime('2026-01-02')).toBeNaN()
  })
})
