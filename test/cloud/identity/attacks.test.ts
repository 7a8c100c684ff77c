// Every attack on cloud identity joins through the real route: a Platform with
// its enrollment listener (TLS, pinned), machines it created at the provider
// fakes, and documents signed by the test clouds' CAs (given through
// --cloud-identity-roots) — or forged. Each refusal is the one generic answer
// on the wire; `nodes audit` has the reason.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { ProviderName } from '../../../src/wire/cloud.ts'
import { cloudOf } from '../../../src/cloud/service.ts'
import { identityProofId, signEnrollProof } from '../../../src/crypto/enroll-proof.ts'
import { VERSION } from '../../../src/version.ts'
import type { FakeMachine } from '../../fakes/common.ts'
import { base64Lines, makeCert, signAwsBer, signDer, signGcpToken, type TestCert } from '../../fakes/identity-sign.ts'
import { newCert } from '../../helpers/certs.ts'
import { listenerTls, startListenerPlatform, type ListenerPlatform } from '../../helpers/node-side.ts'
import { tmpDir, waitFor } from '../../helpers/tmp.ts'
import { FAST_RETRY } from '../_ctx.ts'
import { SETUPS, type Setup } from '../_setups.ts'
import { GCP_KID, makeClouds, metadataFor, type Clouds } from './_clouds.ts'

const enc = new TextEncoder()

describe('cloud identity joins refuse every forgery and replay', () => {
  const dir = tmpDir('muster-identity-attacks-')
  let p: ListenerPlatform
  let clouds: Clouds
  let ca: string
  const setups = new Map<ProviderName, Setup>()

  beforeAll(async () => {
    clouds = makeClouds(dir.path)
    process.env.MUSTER_CLOUD_GCP_CERTS_URL = 'http://127.0.0.1:9/none'
    process.env.MUSTER_CLOUD_CHALLENGE_TTL_MS = '1500'
    p = await startListenerPlatform({ cloudIdentityRoots: clouds.rootsFile })
    const cloud = cloudOf(p.platform)
    cloud.binary = { url: 'https://releases.example/muster', sha256: 'ef'.repeat(32) }
    cloud.retry = FAST_RETRY
    for (const provider of ['aws', 'gcp', 'azure', 'hetzner'] as const) {
      const s = await SETUPS[provider](cloud.endpoints)
      s.fake.book.bootMs = 50
      setups.set(provider, s)
      await p.client.cloud.connect(provider, s.credentials)
    }
    ca = (await listenerTls(p)).ca
  })
  afterAll(async () => {
    for (const s of setups.values()) await s.fake.stop()
    await p?.[Symbol.asyncDispose]()
    dir[Symbol.dispose]()
    delete process.env.MUSTER_CLOUD_GCP_CERTS_URL
    delete process.env.MUSTER_CLOUD_CHALLENGE_TTL_MS
  })

  /** Provisions `name` and waits until the Platform knows its machine; answers what the fake made. */
  async function machine(provider: ProviderName, name: string): Promise<FakeMachine> {
    const s = setups.get(provider)!
    const prv = await p.client.cloud.provision({ provider, name, region: s.region, size: s.size })
    await waitFor(async () => (await p.client.cloud.provisionInfo(prv.id)).machineId !== null, { what: `${name} ordered` })
    return s.fake.book.created.find((m) => m.name === name)!
  }

  /** POST through the pinned enrollment listener, as worker join does. */
  const post = (path: string, body: unknown) => fetch(`${p.enrollUrl}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body), tls: { ca } })

  async function join(nodeId: string, provider: 'aws' | 'gcp' | 'azure', document: string) {
    const kc = await newCert(nodeId)
    const body = { identity: { provider, document }, nodeId, certPem: kc.certPem, version: VERSION, ...signEnrollProof({ keyPem: kc.keyPem, certPem: kc.certPem, nodeId, tokenId: identityProofId(provider) }) }
    const r = await post('/api/v1/nodes/enroll', body)
    return { status: r.status, body: (await r.json()) as Record<string, unknown> }
  }

  async function lastReason(nodeId: string): Promise<string | null> {
    const { entries } = await p.client.nodes.audit()
    return entries.find((e) => e.nodeId === nodeId)?.reason ?? null
  }

  async function refused(nodeId: string, r: { status: number; body: Record<string, unknown> }, reason: string | RegExp) {
    expect(r.status).toBe(403)
    expect(r.body).toEqual({ error: { code: 'enrollment-refused', message: 'Enrollment refused.' } })
    const said = await lastReason(nodeId)
    if (typeof reason === 'string') expect(said).toContain(reason)
    else expect(said).toMatch(reason)
  }

  const awsDoc = (m: FakeMachine, over: Record<string, unknown> = {}, signer?: TestCert) => {
    const doc = { ...metadataFor(clouds, 'aws', m).aws!.document, ...over }
    return base64Lines(signAwsBer({ content: enc.encode(JSON.stringify(doc)), signer: signer ?? clouds.aws.get(m.region)! }))
  }
  const gcpToken = (m: FakeMachine, o: { audience?: string; expiresInS?: number; issuedAt?: number; ce?: Record<string, unknown> } = {}) =>
    signGcpToken(clouds.gcp, GCP_KID, { iss: 'https://accounts.google.com', aud: o.audience ?? p.enrollUrl, google: { compute_engine: { ...metadataFor(clouds, 'gcp', m).gcp!.computeEngine, ...o.ce } } }, o)
  const azureDoc = (m: FakeMachine, nonce: string, o: { signer?: TestCert; bag?: TestCert[]; claimAs?: TestCert; expiresOn?: string } = {}) => {
    const t = (ms: number) => new Date(ms).toISOString().replace(/^(\d\d)(\d\d)-(\d\d)-(\d\d)T(\d\d:\d\d:\d\d).*$/, '$3/$4/$2 $5 -0000')
    const content = { nonce, vmId: m.id, subscriptionId: '00000000-1111-2222-3333-444444444444', timeStamp: { createdOn: t(Date.now()), expiresOn: o.expiresOn ?? t(Date.now() + 3600_000) } }
    const signer = o.signer ?? clouds.azure.signer
    return Buffer.from(signDer({ content: enc.encode(JSON.stringify(content)), signer, bag: o.bag ?? [signer, clouds.azure.intermediate], digestOid: '1.2.840.113549.1.1.11', ...(o.claimAs ? { claimAs: o.claimAs } : {}) })).toString('base64')
  }
  const challenge = async (nodeId: string) => ((await (await post('/api/v1/nodes/identity-challenge', { nodeId })).json()) as { nonce: string }).nonce

  describe('aws', () => {
    test('a document replayed after its machine joined is refused: the record is consumed once', async () => {
      const m = await machine('aws', 'aws-replay')
      const doc = awsDoc(m)
      expect((await join('aws-replay', 'aws', doc)).status).toBe(200)
      expect(await lastReason('aws-replay')).toBe(`identity: instance ${m.id}`)
      await refused('aws-replay', await join('aws-replay', 'aws', doc), `identity: instance ${m.id} already joined`)
      // removed, the name's document still never joins again
      await p.client.nodes.remove('aws-replay', { force: true })
      await refused('aws-replay', await join('aws-replay', 'aws', doc), `identity: instance ${m.id} already joined`)
    })

    test('an instance the Platform did not create (another machine\'s, or none at all) is refused', async () => {
      const mine = await machine('aws', 'aws-mine')
      const other = await machine('aws', 'aws-other')
      await refused('aws-mine', await join('aws-mine', 'aws', awsDoc(other)), `identity: instance ${other.id} is not the machine created as aws-mine (${mine.id})`)
      await refused('aws-nobody', await join('aws-nobody', 'aws', awsDoc(mine)), 'identity: no machine was created as aws-nobody')
    })

    test("another region's signature, or any other key, is refused; the document's own region is never trusted", async () => {
      const m = await machine('aws', 'aws-region')
      const elsewhere = makeCert({ cn: 'test AWS us-east-1' })
      await refused('aws-region', await join('aws-region', 'aws', awsDoc(m, {}, elsewhere)), /identity: AWS document refused: the signer is not the certificate checked \(checked against eu-central-1's certificate\)/)
      // signed by another key while naming the region's certificate
      const claimed = base64Lines(signAwsBer({ content: enc.encode(JSON.stringify(metadataFor(clouds, 'aws', m).aws!.document)), signer: elsewhere, claimAs: clouds.aws.get('eu-central-1')! }))
      await refused('aws-region', await join('aws-region', 'aws', claimed), 'the signature does not verify')
      // a true document, but for another region than the machine's
      await refused('aws-region', await join('aws-region', 'aws', awsDoc(m, { region: 'eu-west-1' })), 'the AWS document is for region eu-west-1, the machine was made in eu-central-1')
    })

    test('a document whose instance started outside the creation window is refused', async () => {
      const m = await machine('aws', 'aws-window')
      await refused('aws-window', await join('aws-window', 'aws', awsDoc(m, { pendingTime: new Date(Date.now() - 86400_000).toISOString() })), /started at .* outside the creation window of aws-window/)
    })

    test('a document for a stopped instance is refused (DescribeInstances)', async () => {
      const m = await machine('aws', 'aws-stopped')
      m.extra.stopped = true
      await refused('aws-stopped', await join('aws-stopped', 'aws', awsDoc(m)), `identity: instance ${m.id} is stopped`)
    })

    test('a released machine is no longer expected', async () => {
      const m = await machine('aws', 'aws-released')
      const prv = (await p.client.cloud.provisions()).provisions.find((x) => x.name === 'aws-released')!
      await p.client.cloud.release(prv.id)
      await refused('aws-released', await join('aws-released', 'aws', awsDoc(m)), 'identity: the machine created as aws-released is no longer expected (released, failed or replaced)')
    })
  })

  describe('gcp', () => {
    test('a true token joins once; expired, wrong-audience, another instance\'s and replayed tokens are refused', async () => {
      const m = await machine('gcp', 'gcp-one')
      await refused('gcp-one', await join('gcp-one', 'gcp', await gcpToken(m, { audience: 'https://elsewhere.example:7443' })), "identity: the GCP token's aud is wrong")
      await refused('gcp-one', await join('gcp-one', 'gcp', await gcpToken(m, { issuedAt: Math.floor(Date.now() / 1000) - 7200, expiresInS: 3600 })), 'identity: the GCP token expired')
      // an instance of the same name made again (another id), and — the create's answer lost, so no id known — another instance
      await refused('gcp-one', await join('gcp-one', 'gcp', await gcpToken(m, { ce: { instance_id: '1' } })), `identity: instance 1 (gcp-one) is not the machine created as gcp-one (${m.id})`)
      await p.platform.store.run('UPDATE cloud_expected_machines SET attested_id = NULL WHERE node_name = ?1', 'gcp-one')
      await refused('gcp-one', await join('gcp-one', 'gcp', await gcpToken(m, { ce: { instance_name: 'gcp-two', instance_id: '2' } })), 'identity: instance 2 (gcp-two) is not the machine created as gcp-one (gcp-one)')
      await refused('gcp-one', await join('gcp-one', 'gcp', await gcpToken(m, { ce: { instance_creation_timestamp: Math.floor(Date.now() / 1000) - 86400 } })), /was created at .* outside the creation window/)
      const forged = await signGcpToken(makeCert({ cn: 'not google' }), GCP_KID, { iss: 'https://accounts.google.com', aud: p.enrollUrl, google: { compute_engine: metadataFor(clouds, 'gcp', m).gcp!.computeEngine } })
      await refused('gcp-one', await join('gcp-one', 'gcp', forged), `identity: the GCP token's signature does not verify with key ${GCP_KID}`)
      const token = await gcpToken(m)
      expect((await join('gcp-one', 'gcp', token)).status).toBe(200)
      await refused('gcp-one', await join('gcp-one', 'gcp', token), 'already joined')
    })
  })

  describe('azure', () => {
    test('a document with a nonce this Platform gave joins once; stale, unknown and replayed nonces are refused', async () => {
      const m = await machine('azure', 'az-one')
      await refused('az-one', await join('az-one', 'azure', azureDoc(m, 'neverGivenByThePlatform1')), "identity: the Azure document's nonce is not a challenge this Platform gave az-one")
      const stale = await challenge('az-one')
      await Bun.sleep(1600)
      await refused('az-one', await join('az-one', 'azure', azureDoc(m, stale)), /identity: the Azure document's nonce expired at .* \(a stale document\)/)
      const other = await challenge('az-someone-else')
      await refused('az-one', await join('az-one', 'azure', azureDoc(m, other)), 'is not a challenge this Platform gave az-one')
      const expired = await challenge('az-one')
      await refused('az-one', await join('az-one', 'azure', azureDoc(m, expired, { expiresOn: '01/01/20 00:00:00 -0000' })), 'identity: the Azure document expired at 2020-01-01T00:00:00.000Z')
      const nonce = await challenge('az-one')
      const doc = azureDoc(m, nonce)
      expect((await join('az-one', 'azure', doc)).status).toBe(200)
      await refused('az-one', await join('az-one', 'azure', doc), `identity: VM ${m.id} already joined`)
      // rebound, the machine may join once more — with a new nonce, never the used one
      await p.client.nodes.rebind('az-one')
      await refused('az-one', await join('az-one', 'azure', doc), "identity: the Azure document's nonce was used already (a replayed document)")
      expect((await join('az-one', 'azure', azureDoc(m, await challenge('az-one')))).status).toBe(200)
    })

    test('a forged PKCS#7 whose signer is not the certificate checked is refused (an Azure certificate first in the bag, signed by another)', async () => {
      const m = await machine('azure', 'az-forged')
      const attacker = makeCert({ cn: 'attacker', dns: ['evil.example'] })
      // the bag leads with the genuine Azure signer (and its intermediate); the attacker's key signs and its certificate is the one named
      const forged = azureDoc(m, await challenge('az-forged'), { signer: attacker, bag: [clouds.azure.signer, clouds.azure.intermediate, attacker] })
      await refused('az-forged', await join('az-forged', 'azure', forged), "identity: the Azure document's signer is not under metadata.azure.com (evil.example)")
      // naming the genuine signer while signing with another key: the signature does not verify
      const claimed = azureDoc(m, await challenge('az-forged'), { signer: attacker, bag: [clouds.azure.signer, clouds.azure.intermediate], claimAs: clouds.azure.signer })
      await refused('az-forged', await join('az-forged', 'azure', claimed), 'identity: Azure document refused: the signature does not verify')
      // a certificate for a metadata.azure.com name that does not chain to Microsoft's roots
      const selfMade = makeCert({ cn: 'westeurope.metadata.azure.com', dns: ['westeurope.metadata.azure.com'] })
      await refused('az-forged', await join('az-forged', 'azure', azureDoc(m, await challenge('az-forged'), { signer: selfMade, bag: [selfMade] })), "identity: the Azure document's certificate: no chain to a trusted root")
      // and a chained certificate for another name
      const wrongName = makeCert({ cn: 'login.example', dns: ['login.example'], issuer: clouds.azure.intermediate })
      await refused('az-forged', await join('az-forged', 'azure', azureDoc(m, await challenge('az-forged'), { signer: wrongName })), 'is not under metadata.azure.com (login.example)')
    })
  })

  describe('azure intermediates', () => {
    test("an intermediate Azure does not send is fetched from the signer's CA Issuers URL, only on Microsoft's host", async () => {
      const m = await machine('azure', 'az-aia')
      const intermediate = clouds.azure.intermediate
      const server = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: () => new Response(Buffer.from(intermediate.der)) })
      try {
        const signer = makeCert({ cn: 'westeurope.metadata.azure.com', dns: ['westeurope.metadata.azure.com'], issuer: intermediate, caIssuers: `http://127.0.0.1:${server.port}/pkiops/certs/intermediate.crt` })
        // the CA Issuers host is not the one allowed: nothing is fetched, no chain
        await refused('az-aia', await join('az-aia', 'azure', azureDoc(m, await challenge('az-aia'), { signer, bag: [signer] })), "identity: the Azure document's certificate: no chain to a trusted root")
        process.env.MUSTER_CLOUD_AZURE_CA_ISSUERS_HOST = '127.0.0.1'
        expect((await join('az-aia', 'azure', azureDoc(m, await challenge('az-aia'), { signer, bag: [signer] }))).status).toBe(200)
      } finally {
        delete process.env.MUSTER_CLOUD_AZURE_CA_ISSUERS_HOST
        server.stop(true)
      }
    })
  })

  describe('hetzner', () => {
    test('the first-boot token is bound to the server the Platform created: a copy used from another server is refused', async () => {
      const m = await machine('hetzner', 'hz-bound')
      const token = (await import('../../fakes/first-boot.ts')).readFirstBoot(m.userData).token!
      const enroll = async (machineId?: string) => {
        const kc = await newCert('hz-bound')
        const body = { token, nodeId: 'hz-bound', certPem: kc.certPem, version: VERSION, ...(machineId ? { machineId } : {}), ...signEnrollProof({ keyPem: kc.keyPem, certPem: kc.certPem, nodeId: 'hz-bound', token }) }
        const r = await post('/api/v1/nodes/enroll', body)
        return { status: r.status, body: (await r.json()) as Record<string, unknown> }
      }
      await refused('hz-bound', await enroll('40009999'), `the token is bound to hetzner server ${m.id}, presented from server 40009999 (a copied token)`)
      await refused('hz-bound', await enroll(), `the token is bound to hetzner server ${m.id}; the join named no server`)
      expect((await enroll(m.id)).status).toBe(200)
    })
  })
})
