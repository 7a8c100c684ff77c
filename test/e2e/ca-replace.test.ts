// Replacing the Platform CA on purpose (README "Replacing the Platform CA"):
// prepare, let nodes learn the new pin at their trust refresh, promote two
// days later; a running node carries on with no re-join, and new joins use
// the new pin.
import { describe, expect, test } from 'bun:test'
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { generateCa, spkiPin } from '../../src/crypto/ca.ts'
import { runMuster, startMuster, startServe } from '../helpers/binary.ts'
import { freePort } from '../helpers/node-side.ts'
import { tmpDir, waitFor } from '../helpers/tmp.ts'

const LIBFAKETIME = '/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1'

describe('replacing the Platform CA', () => {
  test('prepare, nodes learn the pin, promote after two days: the node keeps working, new joins pin the new CA', { timeout: 120_000 }, async () => {
    using dir = tmpDir()
    const data = `${dir.path}/platform`
    await using serve = await startServe(data, ['--enrollment-port', '0', '--enrollment-address', '127.0.0.1', '--no-local-node'], { MUSTER_PROBE_INTERVAL_MS: '300', MUSTER_CERT_CHECK_MS: '100' })
    const [, enrollUrl, oldPin] = (await serve.waitForLog(/enrollment listener on (https:\/\/\S+) .*fingerprint (sha256:[0-9a-f]{64})/)) as unknown as [string, string, string]
    const { token: api } = JSON.parse((await runMuster(['admin', 'api-token', '--data-dir', data, '--json'])).stdout) as { token: string }
    const env = { MUSTER_URL: serve.url, MUSTER_TOKEN: api }
    const join = async (name: string, pin: string) => {
      const { token } = JSON.parse((await runMuster(['nodes', 'enroll-token', name, '--json'], { env })).stdout) as { token: string }
      return runMuster(['worker', 'join', '--platform-url', enrollUrl, '--node-id', name, '--platform-fingerprint', pin, '--address', '127.0.0.1', '--port', String(await freePort()), '--data-dir', `${dir.path}/${name}`], { stdin: token })
    }
    expect((await join('w1', oldPin)).code).toBe(0)
    const agentJson = () => JSON.parse(readFileSync(`${dir.path}/w1/worker/agent.json`, 'utf8')).pin as { fingerprint: string; also?: string[] }
    // the Agent refreshes trust every second here (daily in production)
    await using agent = await startMuster(['agent', '--data-dir', `${dir.path}/w1`], { env: { MUSTER_AGENT_HEARTBEAT_MS: '300', MUSTER_AGENT_TICK_MS: '200', MUSTER_AGENT_TRUST_MS: '1000', MUSTER_AGENT_HOST: '127.0.0.1' } })
    const ready = (name: string) => waitFor(async () => JSON.parse((await runMuster(['nodes', 'list', '--json'], { env })).stdout).nodes.some((n: { name: string; state: string }) => n.name === name && n.state === 'ready'), { timeoutMs: 30_000, what: `${name} ready` })
    await ready('w1')

    // 1. prepare: the node learns the next pin
    const prepared = JSON.parse((await runMuster(['admin', 'ca', 'prepare', '--data-dir', data, '--json'])).stdout) as { current: string; next: string; promotableAt: string }
    expect(prepared.current).toBe(oldPin)
    expect((await runMuster(['admin', 'ca', 'prepare', '--data-dir', data])).code).toBe(1) // one at a time
    await waitFor(() => agentJson().also?.includes(prepared.next), { timeoutMs: 30_000, what: 'the next pin on the node' })
    expect(agentJson().fingerprint).toBe(oldPin)
    const shown = JSON.parse((await runMuster(['nodes', 'platform', '--json'], { env })).stdout)
    expect(shown.ca.next.fingerprint).toBe(prepared.next)
    expect(shown.enrollment.fingerprint).toBe(oldPin) // new joins still use the current pin

    // 2. promote: refused before two days; accepted after (the command's clock moved three days)
    const early = await runMuster(['admin', 'ca', 'promote', '--data-dir', data])
    expect(early.code).toBe(1)
    expect(early.stderr).toContain('less than two days ago')
    const later = { FAKETIME_TIMESTAMP_FILE: `${dir.path}/ft`, FAKETIME_NO_CACHE: '1', DONT_FAKE_MONOTONIC: '1', LD_PRELOAD: LIBFAKETIME }
    await Bun.write(`${dir.path}/ft`, '+3d\n')
    const promoted = await runMuster(['admin', 'ca', 'promote', '--data-dir', data, '--json'], { env: later })
    expect(promoted.code).toBe(0)
    expect(JSON.parse(promoted.stdout)).toEqual({ previous: oldPin, current: prepared.next })

    // the running Platform serves from the new CA; the running node carries on and drops the old pin
    await waitFor(async () => JSON.parse((await runMuster(['nodes', 'platform', '--json'], { env })).stdout).enrollment.fingerprint === prepared.next, { timeoutMs: 30_000, what: 'the listener on the new CA' })
    await waitFor(() => agentJson().fingerprint === prepared.next && !agentJson().also, { timeoutMs: 30_000, what: 'the node on the new pin alone' })
    const since = Date.now()
    await waitFor(async () => JSON.parse((await runMuster(['nodes', 'list', '--json'], { env })).stdout).nodes.some((n: { name: string; state: string; lastSeenAt: string }) => n.name === 'w1' && n.state === 'ready' && Date.parse(n.lastSeenAt) > since), { timeoutMs: 30_000, what: 'w1 heartbeating after the promote' })
    expect(agent.log()).toContain('now authenticated with')

    // new joins: the old pin is refused before anything is sent, the new one works
    const stale = await join('w2', oldPin)
    expect(stale.code).toBe(1)
    expect(stale.stderr).toContain('neither is nor chains to the pinned')
    expect((await join('w3', prepared.next)).code).toBe(0)
  })

  test('a CA with a year or less left is a warning in nodes platform, human and --json', async () => {
    using dir = tmpDir()
    const data = `${dir.path}/platform`
    // a CA made (as if) nine years and some months ago: 200 days left
    const ageing = await generateCa(200)
    mkdirSync(`${data}/platform/ca`, { recursive: true, mode: 0o700 })
    writeFileSync(`${data}/platform/ca/cert.pem`, ageing.certPem, { mode: 0o600 })
    writeFileSync(`${data}/platform/ca/key.pem`, ageing.keyPem, { mode: 0o600 })
    await using serve = await startServe(data, ['--enrollment-port', '0', '--enrollment-address', '127.0.0.1', '--no-local-node'])
    const { token } = JSON.parse((await runMuster(['admin', 'api-token', '--data-dir', data, '--json'])).stdout) as { token: string }
    const env = { MUSTER_URL: serve.url, MUSTER_TOKEN: token }
    const json = await runMuster(['nodes', 'platform', '--json'], { env })
    const info = JSON.parse(json.stdout)
    expect(info.ca.fingerprint).toBe(spkiPin(ageing.certPem))
    expect(info.warnings).toHaveLength(1)
    expect(info.warnings[0]).toMatch(/^The Platform CA expires on .* \(19\d days left\): replace it before then \(muster admin ca prepare/)
    const human = await runMuster(['nodes', 'platform'], { env })
    expect(human.code).toBe(0)
    expect(human.stderr).toContain('days left): replace it before then')
    expect(human.stdout).toContain(`platform CA:     ${spkiPin(ageing.certPem)}`)
  })
})
