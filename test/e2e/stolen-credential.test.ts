// Through dist/muster: a node credential leaks; the
// operator rotates it; the copy tries to renew itself back to the current
// generation. It is refused (and dies with its grace hour), while the real
// Agent, which holds the key, renews and stays ready.
// a copy of the CURRENT credential cannot renew either (every
// renewal proves the agent key), and after remove and a re-enroll of the name
// with a new certificate, the old credential is dead though its generation matches.
import { describe, expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { runMuster, startMuster, startServe } from '../helpers/binary.ts'
import { freePort } from '../helpers/node-side.ts'
import { tmpDir, waitFor } from '../helpers/tmp.ts'

describe('a stolen node credential through dist/muster', () => {
  test('rotated away, it cannot renew itself back; the Agent renews and stays ready', { timeout: 90_000 }, async () => {
    using dir = tmpDir()
    const data = `${dir.path}/platform`
    await using serve = await startServe(data, ['--enrollment-port', '0', '--enrollment-address', '127.0.0.1'], { MUSTER_PROBE_INTERVAL_MS: '300' })
    const minted = JSON.parse((await runMuster(['admin', 'api-token', '--data-dir', data, '--json'])).stdout) as { token: string }
    const env = { MUSTER_URL: serve.url, MUSTER_TOKEN: minted.token }
    const json = async <T>(args: string[]) => JSON.parse((await runMuster([...args, '--json'], { env })).stdout) as T
    const { enrollment } = await json<{ enrollment: { url: string; fingerprint: string } }>(['nodes', 'platform'])
    const { token } = await json<{ token: string }>(['nodes', 'enroll-token', 'w1'])
    const work = `${dir.path}/w1`
    const joined = await runMuster(['worker', 'join', '--platform-url', enrollment.url, '--node-id', 'w1', '--platform-fingerprint', enrollment.fingerprint, '--address', '127.0.0.1', '--port', String(await freePort()), '--data-dir', work], { stdin: token })
    expect(joined.code).toBe(0)
    const agentEnv = { MUSTER_AGENT_HEARTBEAT_MS: '300', MUSTER_AGENT_HOST: '127.0.0.1' }
    const first = await startMuster(['agent', '--data-dir', work], { env: agentEnv })
    const state = async () => (await json<{ nodes: { name: string; state: string }[] }>(['nodes', 'list'])).nodes.find((n) => n.name === 'w1')?.state
    await waitFor(async () => (await state()) === 'ready', { timeoutMs: 30_000, what: 'w1 ready' })
    // The Agent is down a moment (so the copy is the first to try); it renews when it is back.
    expect(await first.stop()).toBe(0)

    const stolen = readFileSync(`${work}/worker/node-credential`, 'utf8').trim()
    expect(stolen).toMatch(/^mnc_w1\.1\./)
    const rotated = await json<{ generation: number }>(['nodes', 'rotate', 'w1'])
    expect(rotated.generation).toBe(2)

    const renew = (body?: unknown) => fetch(`${serve.url}/api/v1/nodes/renew`, { method: 'POST', headers: { authorization: `Bearer ${stolen}`, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) })
    for (const body of [undefined, {}, { proofTime: Math.floor(Date.now() / 1000), proof: 'A'.repeat(96) }]) {
      const r = await renew(body)
      const text = await r.text()
      expect(text).not.toContain('mnc_')
      expect(r.status).toBe(403)
    }
    // The copy still heartbeats through its grace hour, but got nothing newer than what it had.
    const beat = () => fetch(`${serve.url}/api/v1/nodes/register`, { method: 'POST', headers: { authorization: `Bearer ${stolen}`, 'content-type': 'application/json' }, body: '{}' })
    expect((await beat()).status).toBe(200)
    // The Agent, holding the key, picks up a generation of its own and is ready again.
    await using agent = await startMuster(['agent', '--data-dir', work], { env: agentEnv })
    await waitFor(() => /^mnc_w1\.3\./.test(readFileSync(`${work}/worker/node-credential`, 'utf8')), { timeoutMs: 15_000, what: 'the Agent renewed' })
    await waitFor(async () => (await state()) === 'ready', { timeoutMs: 30_000, what: 'w1 ready again' })
    // Two generations on, the copy is not even the previous one: it is dead at once.
    expect((await beat()).status).toBe(401)
    expect(agent.log()).toContain('node credential renewed (generation 3)')
  })

  test('a copy of the current credential cannot renew; the Agent renews daily; a removed name re-enrolled kills the copy', { timeout: 120_000 }, async () => {
    using dir = tmpDir()
    const data = `${dir.path}/platform`
    await using serve = await startServe(data, ['--enrollment-port', '0', '--enrollment-address', '127.0.0.1'], { MUSTER_PROBE_INTERVAL_MS: '300' })
    const minted = JSON.parse((await runMuster(['admin', 'api-token', '--data-dir', data, '--json'])).stdout) as { token: string }
    const env = { MUSTER_URL: serve.url, MUSTER_TOKEN: minted.token }
    const json = async <T>(args: string[]) => JSON.parse((await runMuster([...args, '--json'], { env })).stdout) as T
    const { enrollment } = await json<{ enrollment: { url: string; fingerprint: string } }>(['nodes', 'platform'])
    const join = async (work: string, replace = false) => {
      const { token } = await json<{ token: string }>(['nodes', 'enroll-token', 'w1', ...(replace ? ['--replace'] : [])])
      const joined = await runMuster(['worker', 'join', '--platform-url', enrollment.url, '--node-id', 'w1', '--platform-fingerprint', enrollment.fingerprint, '--address', '127.0.0.1', '--port', String(await freePort()), '--data-dir', work], { stdin: token })
      expect(joined.code).toBe(0)
    }
    const state = async () => (await json<{ nodes: { name: string; state: string }[] }>(['nodes', 'list'])).nodes.find((n) => n.name === 'w1')?.state
    const credentialIn = (work: string) => readFileSync(`${work}/worker/node-credential`, 'utf8').trim()
    const post = (path: string, credential: string, body?: unknown) =>
      fetch(`${serve.url}${path}`, { method: 'POST', headers: { authorization: `Bearer ${credential}`, 'content-type': 'application/json' }, body: JSON.stringify(body ?? {}) })

    const first = `${dir.path}/w1`
    await join(first)
    const copy = credentialIn(first) // the current credential, copied without the key
    expect(copy).toMatch(/^mnc_w1\.1\./)
    // Twice in a row, before the Agent ever runs: what used to lock the real Agent out for good.
    for (const body of [undefined, { proofTime: Math.floor(Date.now() / 1000), proof: 'A'.repeat(96) }, undefined]) {
      const r = await post('/api/v1/nodes/renew', copy, body)
      expect(await r.text()).not.toContain('mnc_')
      expect(r.status).toBe(403)
    }
    // The Agent renews "daily" (every 2 s here) and stays ready.
    await using agent = await startMuster(['agent', '--data-dir', first], { env: { MUSTER_AGENT_HEARTBEAT_MS: '300', MUSTER_AGENT_HOST: '127.0.0.1', MUSTER_AGENT_RENEW_MS: '2000', MUSTER_AGENT_TICK_MS: '250' } })
    await waitFor(() => /^mnc_w1\.2\./.test(credentialIn(first)), { timeoutMs: 30_000, what: 'a renewal by the Agent' })
    await waitFor(async () => (await state()) === 'ready', { timeoutMs: 30_000, what: 'w1 ready' })
    expect(agent.log()).toContain('node credential renewed (generation 2)')
    expect(agent.log()).not.toContain('renewal failed')

    // The operator retires the machine and enrolls the name again on a new one (a new certificate).
    expect(await agent.stop()).toBe(0)
    expect((await runMuster(['nodes', 'revoke', 'w1'], { env })).code).toBe(0)
    expect((await runMuster(['nodes', 'remove', 'w1'], { env })).code).toBe(0)
    const second = `${dir.path}/w1-new`
    await join(second, true)
    expect(credentialIn(second)).toMatch(/^mnc_w1\.1\./) // generation 1 again, as the copy's
    expect((await post('/api/v1/nodes/register', copy)).status).toBe(401)
    expect((await post('/api/v1/nodes/renew', copy)).status).toBe(401)
    expect((await fetch(`${serve.url}/api/v1/nodes/self/assignments`, { headers: { authorization: `Bearer ${copy}` } })).status).toBe(401)
    expect((await post('/api/v1/nodes/register', credentialIn(second))).status).toBe(200)
  })
})
