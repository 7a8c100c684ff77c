// docs/security.md: node traffic is never plain text. The API binds loopback by
// default; off loopback it serves HTTPS with a certificate from the Platform
// CA, which nodes verify with the same pin; serve refuses remote dispatch
// with a plain-http public URL unless told; a node refuses to send its
// credential over plain http to another machine.
import { afterEach, describe, expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { Agent } from '../../src/agent/agent.ts'
import { joinPlatform } from '../../src/agent/join.ts'
import { createClient } from '../../src/client/index.ts'
import { isIssuedBy, spkiPin } from '../../src/crypto/ca.ts'
import { clearPinCache, pinnedFetch, probeChain } from '../../src/crypto/pin.ts'
import { certCovers, certFingerprint, derToPem } from '../../src/crypto/x509.ts'
import type { MusterError } from '../../src/errors.ts'
import { firstRoutableIPv4 } from '../../src/addresses.ts'
import { runMuster, startServe } from '../helpers/binary.ts'
import { freePort, startListenerPlatform } from '../helpers/node-side.ts'
import { tmpDir, waitFor } from '../helpers/tmp.ts'

afterEach(() => clearPinCache())
const DAY = 86_400_000

const portOf = (url: string) => Number(new URL(url).port)

describe('the API off loopback', () => {
  test('serves HTTPS from the Platform CA, verified with the pin; plain http and the system roots get nothing', async () => {
    await using p = await startListenerPlatform({ host: '0.0.0.0' })
    const port = portOf(p.url)
    expect(p.url.startsWith('https://')).toBe(true)
    const chain = await probeChain('127.0.0.1', port)
    expect(chain).toHaveLength(2)
    expect(spkiPin(chain[1]!)).toBe(p.platform.pki.ca.pin)
    const ip = firstRoutableIPv4()
    expect(certCovers(derToPem(chain[0]!), { dnsNames: ['localhost'], ipAddresses: ['127.0.0.1', ...(ip ? [ip] : [])] })).toBe(true)
    // the operator's client with the pin
    const pinned = createClient({ url: `https://127.0.0.1:${port}`, token: p.token, fetch: (u, i) => pinnedFetch(u, i, { fingerprint: p.platform.pki.ca.pin }) })
    expect((await pinned.nodes.platform()).ca.fingerprint).toBe(p.platform.pki.ca.pin)
    // without it: the system roots do not know this CA; plain http is not served
    await expect(createClient({ url: `https://127.0.0.1:${port}`, token: p.token }).nodes.list()).rejects.toThrow()
    const plain = await fetch(`http://127.0.0.1:${port}/healthz`).then((r) => r.status, () => 'failed')
    expect(plain === 'failed' || plain === 400).toBe(true)
    // nodes are told an https URL that names this machine, not the wildcard
    const { token } = await pinned.nodes.createEnrollment({ nodeId: 'w1' })
    using dir = tmpDir()
    await joinPlatform({ dataDir: dir.path, platformUrl: p.enrollUrl, nodeId: 'w1', fingerprint: p.fingerprint, addresses: ['127.0.0.1'], port: await freePort(), readToken: async () => token })
    const config = JSON.parse(readFileSync(`${dir.path}/worker/agent.json`, 'utf8'))
    expect(config.platformUrl).toMatch(/^https:\/\//)
    expect(config.platformUrl).not.toContain('0.0.0.0')
    expect(config.pin).toEqual({ fingerprint: p.platform.pki.ca.pin })
  })

  test('an Agent heartbeats to the HTTPS API with the CA pin and becomes ready', async () => {
    await using p = await startListenerPlatform({ host: '0.0.0.0', probeIntervalMs: 150 })
    using dir = tmpDir()
    const port = portOf(p.url)
    const admin = createClient({ url: `https://127.0.0.1:${port}`, token: p.token, fetch: (u, i) => pinnedFetch(u, i, { fingerprint: p.platform.pki.ca.pin }) })
    const e = await admin.nodes.createEnrollment({ nodeId: 'w1' })
    const agentPort = await freePort()
    await joinPlatform({ dataDir: dir.path, platformUrl: p.enrollUrl, nodeId: 'w1', fingerprint: p.fingerprint, addresses: ['127.0.0.1'], port: agentPort, readToken: async () => e.token })
    // the published URL names this machine's own address, which the wildcard bind answers
    expect(JSON.parse(readFileSync(`${dir.path}/worker/agent.json`, 'utf8')).platformUrl).toBe(`https://${firstRoutableIPv4() ?? 'localhost'}:${port}`)
    const agent = new Agent({ dataDir: dir.path, host: '127.0.0.1', heartbeatMs: 100, workloads: false })
    await agent.start()
    try {
      await waitFor(async () => (await admin.nodes.list()).nodes.find((n) => n.name === 'w1')?.state === 'ready', { what: 'w1 ready over https' })
    } finally {
      await agent.stop()
    }
  })

  test('renewed while running 30 days before it expires; the pin stays, new connections get the new certificate', async () => {
    await using p = await startListenerPlatform({ host: '0.0.0.0' })
    const port = portOf(p.url)
    const pin = { fingerprint: p.platform.pki.ca.pin }
    const leaf = async () => certFingerprint((await probeChain('127.0.0.1', port))[0]!)
    const before = await leaf()
    p.advance(340 * DAY)
    // a request notices the wall clock; the renewal swaps the server on the same port
    expect((await pinnedFetch(`https://127.0.0.1:${port}/healthz`, {}, pin)).status).toBe(200)
    await waitFor(async () => (await leaf()) !== before, { what: 'the renewed API certificate' })
    const chain = await probeChain('127.0.0.1', port)
    expect(isIssuedBy(chain[0]!, p.platform.pki.ca.certPem)).toBe(true)
    expect((await pinnedFetch(`https://127.0.0.1:${port}/healthz`, {}, pin)).status).toBe(200)
  })
})

describe('operators against an https Platform', () => {
  test('login checks the CA pin before the password goes out and saves it; later commands use it', { timeout: 60_000 }, async () => {
    using dir = tmpDir()
    const data = `${dir.path}/platform`
    await using serve = await startServe(data, ['--host', '0.0.0.0'])
    const url = `https://127.0.0.1:${portOf(serve.url)}`
    const password = readFileSync(`${data}/platform/initial-superadmin-password`, 'utf8').trim()
    const { token } = JSON.parse((await runMuster(['admin', 'api-token', '--data-dir', data, '--json'])).stdout) as { token: string }
    const pin = (JSON.parse((await runMuster(['nodes', 'platform', '--json', '--platform-url', url, '--token', token, '--platform-ca-file', `${data}/platform/ca.pem`])).stdout) as { ca: { fingerprint: string } }).ca.fingerprint
    const home = (name: string) => ({ HOME: `${dir.path}/${name}`, XDG_CONFIG_HOME: `${dir.path}/${name}/.config` })
    // a wrong pin: refused at the TLS handshake, before the request (and the password) is written
    const wrong = await runMuster(['login', '--platform-url', url, '--identifier', 'superadmin', '--platform-fingerprint', `sha256:${'ab'.repeat(32)}`], { stdin: `${password}\n`, env: home('a') })
    expect(wrong.code).toBe(1)
    expect(wrong.stderr).toContain('which neither is nor chains to the pinned')
    expect(wrong.stderr).toContain('check --platform-fingerprint')
    // without a pin the system roots do not know the Platform CA
    const unpinned = await runMuster(['login', '--platform-url', url, '--identifier', 'superadmin'], { stdin: `${password}\n`, env: home('b') })
    expect(unpinned.code).toBe(1)
    const ok = await runMuster(['login', '--platform-url', url, '--identifier', 'superadmin', '--platform-fingerprint', pin, '--json'], { stdin: `${password}\n`, env: home('c') })
    expect(ok.code).toBe(0)
    const saved = JSON.parse(readFileSync(`${dir.path}/c/.config/muster/credentials.json`, 'utf8'))
    expect(saved).toMatchObject({ url, pin: { fingerprint: pin } })
    const listed = await runMuster(['nodes', 'list', '--json'], { env: home('c') })
    expect(listed.code).toBe(0)
    expect(Array.isArray(JSON.parse(listed.stdout).nodes)).toBe(true)
    // tokens list and logout use the saved pin too: the saved token is revoked on the Platform, the file removed
    const tokens = await runMuster(['tokens', 'list', '--json'], { env: home('c') })
    expect(tokens.code).toBe(0)
    const savedId = /^mat_([a-z2-7]{16})\./.exec(saved.token)![1]!
    expect((JSON.parse(tokens.stdout) as { tokens: { id: string }[] }).tokens.map((t) => t.id)).toContain(savedId)
    const out = await runMuster(['logout', '--json'], { env: home('c') })
    expect([out.code, JSON.parse(out.stdout)]).toMatchObject([0, { loggedOut: true, revoked: true }])
    expect((await pinnedFetch(`${url}/api/v1/whoami`, { headers: { authorization: `Bearer ${saved.token}` } }, { fingerprint: pin })).status).toBe(401)
  })
})

describe('plain http for nodes', () => {
  test('serve refuses remote dispatch with a plain-http public URL, says how to fix it, and starts with the flag', async () => {
    using dir = tmpDir()
    const refused = await runMuster(['serve', '--data-dir', `${dir.path}/a`, '--port', '0', '--remote-dispatch', '--public-url', 'http://10.20.30.40:7380'])
    expect(refused.code).toBe(1)
    expect(refused.stderr).toContain('--allow-insecure-node-traffic')
    expect(refused.stderr).toContain('HTTPS')
    expect(await Bun.file(`${dir.path}/a/platform/initial-superadmin-password`).exists()).toBe(false)
    await using allowed = await startServe(`${dir.path}/b`, ['--remote-dispatch', '--public-url', 'http://10.20.30.40:7380', '--allow-insecure-node-traffic'])
    expect(allowed.url).toMatch(/^http:\/\/127\.0\.0\.1:/)
    // loopback is the one plain-http exception (the demo, tests)
    await using local = await startServe(`${dir.path}/c`, ['--remote-dispatch', '--public-url', 'http://127.0.0.1:7380'])
    expect(local.url).toMatch(/^http:/)
  })

  test('a node refuses to send its credential over plain http to another machine; nothing is written', async () => {
    await using p = await startListenerPlatform({ publicUrl: 'http://10.20.30.40:7380', allowInsecureNodeTraffic: true })
    using dir = tmpDir()
    // An earlier Platform (or a broken one) gives a plain-http API on another machine without the operator's flag.
    const anchors = p.platform.fabric.nodeAnchors.bind(p.platform.fabric)
    p.platform.fabric.nodeAnchors = () => ({ ...anchors(), insecureNodeTraffic: undefined })
    const { token } = await p.client.nodes.createEnrollment({ nodeId: 'w1' })
    const opts = { dataDir: dir.path, platformUrl: p.enrollUrl, nodeId: 'w1', fingerprint: p.fingerprint, addresses: ['127.0.0.1'], port: 7399, readToken: async () => token }
    const err = (await joinPlatform(opts).catch((e) => e)) as MusterError
    expect(err.code).toBe('forbidden')
    expect(err.message).toContain('plain http to another machine')
    expect(await Bun.file(`${dir.path}/worker/agent.json`).exists()).toBe(false)
    // with the operator's flag in the answer, the node goes along (and warns)
    p.platform.fabric.nodeAnchors = anchors
    const ok = await joinPlatform(opts)
    expect(ok.nodeId).toBe('w1')
    expect(JSON.parse(readFileSync(`${dir.path}/worker/agent.json`, 'utf8')).platformUrl).toBe('http://10.20.30.40:7380')
  })
})
