// Errors on the node say what to do, through dist/muster:
// every trust failure of `worker join` names the flag or URL that fixes it and
// never the TLS library's text; a token of the wrong shape is refused before
// it is sent; a refusal points at `muster nodes audit`. A Platform whose API
// has its own --tls-cert from a private CA: the join checks the API too and
// asks for --platform-ca-file beside the pin; with both, the Agent heartbeats.
import { describe, expect, test } from 'bun:test'
import { writeFileSync } from 'node:fs'
import { issueServerCert, generateCa } from '../../src/crypto/ca.ts'
import { runMuster, startMuster, startServeWithListener } from '../helpers/binary.ts'
import { freePort } from '../helpers/node-side.ts'
import { tmpDir, waitFor } from '../helpers/tmp.ts'

const RAW = ['self signed certificate', 'WRONG_VERSION_NUMBER', 'fetch() URL is invalid', 'unable to verify the first certificate', 'EPROTO', 'ECONNREFUSED', 'OPENSSL']

async function json<T>(args: string[], env: Record<string, string>): Promise<T> {
  const r = await runMuster([...args, '--json'], { env })
  if (r.code !== 0) throw new Error(`muster ${args.join(' ')} exited ${r.code}: ${r.stderr}`)
  return JSON.parse(r.stdout) as T
}

describe('worker join says what to do', () => {
  test('each trust failure names its fix; a bad token never leaves; a refusal points at the audit', { timeout: 120_000 }, async () => {
    using dir = tmpDir()
    await using serve = await startServeWithListener(`${dir.path}/platform`)
    const { token } = await json<{ token: string }>(['nodes', 'enroll-token', 'w1'], serve.env)
    const plain = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: () => new Response('not muster', { status: 404 }) })
    const closed = await freePort()
    const join = (url: string, extra: string[], stdin = token) => runMuster(['worker', 'join', '--platform-url', url, '--node-id', 'w1', '--address', '127.0.0.1', '--port', '7999', '--data-dir', `${dir.path}/w`, ...extra], { stdin })
    const pin = ['--platform-fingerprint', serve.fingerprint]
    try {
      const cases: [string, () => Promise<{ code: number; stderr: string }>, string[]][] = [
        ['a wrong pin', () => join(serve.enrollUrl, ['--platform-fingerprint', `sha256:${'ab'.repeat(32)}`]), ['which neither is nor chains to the pinned', 'check --platform-fingerprint against the pin `muster nodes platform` prints', 'nothing was sent']],
        ['no pin: the Platform CA is no system root', () => join(serve.enrollUrl, []), ['not signed by a CA this machine trusts', 'pass --platform-fingerprint', '--platform-ca-file', 'nothing was sent']],
        ['the API port (plain http)', () => join(serve.url.replace('http:', 'https:'), pin), ["is the Platform's API port (plain http), not the enrollment listener", '`muster nodes platform` prints it']],
        ['some plain-http port', () => join(`https://127.0.0.1:${plain.port}`, pin), ['that port speaks plain http, not https']],
        ['a closed port', () => join(`https://127.0.0.1:${closed}`, pin), ['connection refused or no route to it (is `muster serve` running there, on that port, and is the address right?)']],
        ['a name the listener certificate does not carry', () => join(serve.enrollUrl.replace('127.0.0.1', 'localhost'), pin), ['its certificate does not name localhost']],
        ['a token of the wrong shape', () => join(serve.enrollUrl, pin, 'mat_not-a-join-token'), ['That is not a join token (that is an operator API token, not a join token)', 'Nothing was sent']],
        ['a token the Platform refuses', () => join(serve.enrollUrl, pin, `mjt_${'a'.repeat(16)}.${'A'.repeat(43)}`), ['refused the enrollment', 'The operator sees the reason in `muster nodes audit`']],
      ]
      for (const [what, run, words] of cases) {
        const r = await run()
        expect({ what, code: r.code }).toEqual({ what, code: 1 })
        for (const w of words) expect({ what, says: r.stderr.includes(w), stderr: r.stderr }).toMatchObject({ what, says: true })
        for (const raw of RAW) expect({ what, raw, leaked: r.stderr.includes(raw) }).toEqual({ what, raw, leaked: false })
        expect(r.stderr.trim().split('\n')).toHaveLength(1)
      }
      // Only the refused token reached the Platform: one audit entry; the enrollment for w1 is unspent.
      const audit = await json<{ entries: { outcome: string }[] }>(['nodes', 'audit'], serve.env)
      expect(audit.entries.map((e) => e.outcome)).toEqual(['refused'])
      const joined = await join(serve.enrollUrl, pin)
      expect({ code: joined.code, stderr: joined.stderr.includes('Joined as w1') || joined.stdout.includes('Joined as w1') }).toEqual({ code: 0, stderr: true })
    } finally {
      plain.stop(true)
    }
  })

  test('a Platform with its own --tls-cert from a private CA: the join asks for --platform-ca-file beside the pin, then the Agent heartbeats', { timeout: 120_000 }, async () => {
    using dir = tmpDir()
    const ca = await generateCa(30)
    const leaf = await issueServerCert(ca, { commonName: 'api', dnsNames: ['localhost'], ipAddresses: ['127.0.0.1'], days: 30 })
    const files = { ca: `${dir.path}/company-ca.pem`, cert: `${dir.path}/api.pem`, key: `${dir.path}/api.key` }
    writeFileSync(files.ca, ca.certPem)
    writeFileSync(files.cert, leaf.certPem)
    writeFileSync(files.key, leaf.keyPem, { mode: 0o600 })
    await using serve = await startServeWithListener(`${dir.path}/platform`, ['--tls-cert', files.cert, '--tls-key', files.key])
    expect(serve.url).toStartWith('https://127.0.0.1:')
    const env = { ...serve.env, MUSTER_PLATFORM_CA_FILE: files.ca }
    const { token } = await json<{ token: string }>(['nodes', 'enroll-token', 'w1'], env)
    const work = `${dir.path}/w`
    const args = ['worker', 'join', '--platform-url', serve.enrollUrl, '--node-id', 'w1', '--platform-fingerprint', serve.fingerprint, '--address', '127.0.0.1', '--port', String(await freePort()), '--data-dir', work]

    const pinOnly = await runMuster(args, { stdin: token })
    expect(pinOnly.code).toBe(1)
    expect(pinOnly.stderr).toContain(`The Platform API at ${serve.url} (where this node would heartbeat) has a certificate no pin names`)
    expect(pinOnly.stderr).toContain('Join again with --platform-ca-file FILE (the CA that signed that certificate) beside --platform-fingerprint; nothing was sent.')
    for (const raw of RAW) expect(pinOnly.stderr).not.toContain(raw)

    const both = await runMuster([...args, '--platform-ca-file', files.ca], { stdin: token }) // the same token: nothing was spent
    expect({ code: both.code, stderr: both.stderr }).toEqual({ code: 0, stderr: expect.any(String) })
    await using agent = await startMuster(['agent', '--data-dir', work], { env: { MUSTER_AGENT_HOST: '127.0.0.1', MUSTER_AGENT_HEARTBEAT_MS: '300' } })
    await waitFor(async () => (await json<{ nodes: { name: string; state: string }[] }>(['nodes', 'list'], env)).nodes.find((n) => n.name === 'w1')?.state === 'ready', { timeoutMs: 45_000, what: 'w1 ready' })
    expect(agent.log()).not.toContain('heartbeat failed')
    const doctor = await runMuster(['doctor', '--data-dir', work, '--root', `${dir.path}/root`])
    expect(doctor.stdout).toMatch(/ok\s+platform-api/)
    expect(doctor.stdout).toMatch(/ok\s+credential/)
  })
})
