// `worker join` against a real Platform and enrollment listener over TLS (docs/nodes.md).
import { afterEach, describe, expect, test } from 'bun:test'
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:https'
import { joinPlatform, type JoinOptions } from '../../src/agent/join.ts'
import { clearPinCache } from '../../src/crypto/pin.ts'
import { certFingerprint, generateKeyAndCert } from '../../src/crypto/x509.ts'
import type { MusterError } from '../../src/errors.ts'
import { listenerTls, startListenerPlatform, type ListenerPlatform } from '../helpers/node-side.ts'
import { spkiPin } from '../../src/crypto/ca.ts'
import { tmpDir } from '../helpers/tmp.ts'

afterEach(() => clearPinCache())

async function setup(p: ListenerPlatform, dir: string, over: Partial<JoinOptions> = {}) {
  const { token } = await p.client.nodes.createEnrollment({ nodeId: 'w1' })
  let asked = 0
  const opts: JoinOptions = {
    dataDir: `${dir}/node`,
    platformUrl: p.enrollUrl,
    nodeId: 'w1',
    fingerprint: p.fingerprint,
    addresses: ['127.0.0.1'],
    port: 7399,
    readToken: async () => (asked++, token),
    ...over,
  }
  return { token, opts, asked: () => asked }
}

const unspent = async (p: ListenerPlatform) => (await p.client.nodes.list()).pendingEnrollments.map((e) => e.nodeId)

describe('worker join', () => {
  test('joins with the right pin and writes its files 0600; a repeat is a no-op; another Platform is refused', async () => {
    await using p = await startListenerPlatform()
    using dir = tmpDir()
    const { token, opts } = await setup(p, dir.path)
    const r = await joinPlatform(opts)
    expect(r).toEqual({ nodeId: 'w1', agentId: 'agent-w1', dataDir: opts.dataDir, start: `muster agent --data-dir ${opts.dataDir}`, alreadyJoined: false })
    const files = readdirSync(`${opts.dataDir}/worker`).sort()
    expect(files).toEqual(['agent.crt', 'agent.json', 'agent.key', 'node-credential', 'platforms.json', 'trust.json'])
    expect(statSync(`${opts.dataDir}/worker`).mode & 0o777).toBe(0o700)
    for (const f of files) {
      expect(statSync(`${opts.dataDir}/worker/${f}`).mode & 0o777).toBe(0o600)
      expect(readFileSync(`${opts.dataDir}/worker/${f}`, 'utf8')).not.toContain(token.split('.')[1]!)
    }
    const config = JSON.parse(readFileSync(`${opts.dataDir}/worker/agent.json`, 'utf8'))
    expect(config).toMatchObject({ nodeId: 'w1', enrollmentUrl: p.enrollUrl, platformUrl: p.url, pin: { fingerprint: p.fingerprint }, addresses: ['127.0.0.1'], port: 7399, url: 'https://127.0.0.1:7399' })
    const node = (await p.client.nodes.list()).nodes.find((n) => n.name === 'w1')!
    expect(`sha256:${node.certificateSha256}`).toBe(certFingerprint(readFileSync(`${opts.dataDir}/worker/agent.crt`, 'utf8')))

    expect((await joinPlatform(opts)).alreadyJoined).toBe(true)
    const elsewhere = joinPlatform({ ...opts, platformUrl: 'https://127.0.0.1:1' })
    await expect(elsewhere).rejects.toThrow(`rm -rf ${opts.dataDir}/worker`)
  })

  test('a wrong pin fails before the token is asked for or a request is sent', async () => {
    await using p = await startListenerPlatform()
    using dir = tmpDir()
    const { opts, asked } = await setup(p, dir.path, { fingerprint: `sha256:${'0'.repeat(64)}` })
    const err = (await joinPlatform(opts).catch((e) => e)) as MusterError
    expect(err.code).toBe('forbidden')
    expect(err.message).toContain('nothing was sent')
    expect(asked()).toBe(0)
    expect(p.listener.forwarded + p.listener.refused).toBe(0)
    expect(await unspent(p)).toEqual(['w1'])
  })

  test('plain http is refused, saying why', async () => {
    await using p = await startListenerPlatform()
    using dir = tmpDir()
    const { opts, asked } = await setup(p, dir.path, { platformUrl: p.url })
    await expect(joinPlatform(opts)).rejects.toThrow('would cross an unauthenticated link')
    await joinPlatform(opts).catch(() => {})
    expect(asked()).toBe(0)
    expect(p.appSeen).toEqual([])
    expect(await unspent(p)).toEqual(['w1'])
  })

  test('a redirect is not followed', async () => {
    await using p = await startListenerPlatform()
    using dir = tmpDir()
    const kc = await generateKeyAndCert({ commonName: 'redirector', dnsNames: ['localhost'], ipAddresses: ['127.0.0.1'], days: 2 })
    let hits = 0
    const server = createServer({ cert: kc.certPem, key: kc.keyPem }, (req, res) => {
      hits++
      res.writeHead(307, { location: `${p.enrollUrl}${req.url}` }).end()
    })
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()))
    try {
      const port = (server.address() as { port: number }).port
      const { opts } = await setup(p, dir.path, { platformUrl: `https://127.0.0.1:${port}`, fingerprint: kc.fingerprint })
      await expect(joinPlatform(opts)).rejects.toThrow('redirect')
      await joinPlatform(opts).catch(() => {})
      expect(hits).toBeGreaterThan(0)
      expect(p.listener.forwarded + p.listener.refused).toBe(0)
      expect(await unspent(p)).toEqual(['w1'])
    } finally {
      server.closeAllConnections()
      server.close()
    }
  })

  test('a retry after a lost response enrolls the same certificate with the same single-use token', async () => {
    await using p = await startListenerPlatform()
    using dir = tmpDir()
    // A front with the listener's own certificate: it forwards the enroll, then drops the answer once.
    const { cert, key } = await listenerTls(p)
    const tls = { cert, key }
    let dropped = 0
    const front = createServer(tls, async (req, res) => {
      const chunks: Buffer[] = []
      for await (const c of req) chunks.push(c as Buffer)
      const answer = await p.platform.app.handle(new Request(`http://enrollment-listener${req.url}`, { method: req.method, headers: { 'content-type': 'application/json' }, body: Buffer.concat(chunks) }))
      if (req.url?.endsWith('/enroll') && dropped++ === 0) return void res.socket?.destroy()
      res.writeHead(answer.status, { 'content-type': 'application/json' }).end(await answer.text())
    })
    await new Promise<void>((r) => front.listen(0, '127.0.0.1', () => r()))
    try {
      const port = (front.address() as { port: number }).port
      const { opts } = await setup(p, dir.path, { platformUrl: `https://127.0.0.1:${port}` })
      const lost = (await joinPlatform(opts).catch((e) => e)) as MusterError
      expect(lost.code).toBe('platform-unreachable')
      const certAfterLoss = readFileSync(`${opts.dataDir}/worker/agent.crt`, 'utf8')
      expect(await unspent(p)).toEqual([]) // the use was taken before the answer was lost
      const r = await joinPlatform(opts)
      expect(r.alreadyJoined).toBe(false)
      expect(readFileSync(`${opts.dataDir}/worker/agent.crt`, 'utf8')).toBe(certAfterLoss)
      const node = (await p.client.nodes.list()).nodes.find((n) => n.name === 'w1')!
      expect(`sha256:${node.certificateSha256}`).toBe(certFingerprint(certAfterLoss))
      expect(dropped).toBe(2)
    } finally {
      front.closeAllConnections()
      front.close()
    }
  })

  test('joins with the Platform CA as a CA file, and keeps its pin (so it follows a CA replacement)', async () => {
    await using p = await startListenerPlatform()
    using dir = tmpDir()
    const caFile = `${dir.path}/platform-ca.pem`
    writeFileSync(caFile, (await listenerTls(p)).ca)
    const { opts } = await setup(p, dir.path, { fingerprint: undefined, caFile })
    await joinPlatform(opts)
    const config = JSON.parse(readFileSync(`${opts.dataDir}/worker/agent.json`, 'utf8'))
    expect(config.pin).toEqual({ fingerprint: spkiPin(readFileSync(caFile, 'utf8')) })
    expect(config.pin.fingerprint).toBe(p.platform.pki.ca.pin)
    // a CA that did not sign the Platform's certificate is refused before anything is sent
    const other = await generateKeyAndCert({ commonName: 'other', dnsNames: [], ipAddresses: ['127.0.0.1'], days: 2 })
    writeFileSync(caFile, other.certPem)
    const { token } = await p.client.nodes.createEnrollment({ nodeId: 'w2' })
    const err = (await joinPlatform({ ...opts, dataDir: `${dir.path}/n2`, nodeId: 'w2', readToken: async () => token }).catch((e) => e)) as MusterError
    expect(err.code).toBe('forbidden')
    expect(await unspent(p)).toEqual(['w2'])
  })
})
