// A node's state is the truth (docs/operations.md), through dist/muster processes:
// doctor fails for a revoked, rebound, removed or unknown credential and names
// the way back; the Agent exits 3 with one line when its credential is refused
// for good (and keeps going through an outage); `worker join` over a dead
// credential enrolls again; a new node is ready without being unreachable;
// after a Platform restart the Agent heartbeats again within 10 s.
import { describe, expect, test } from 'bun:test'
import { readFileSync, writeFileSync } from 'node:fs'
import { runMuster, startMuster, startServe, startServeWithListener, type Daemon } from '../helpers/binary.ts'
import { freePort } from '../helpers/node-side.ts'
import { tmpDir, waitFor } from '../helpers/tmp.ts'

interface Check {
  name: string
  status: string
  message: string
}
type Listener = { enrollUrl: string; fingerprint: string; env: Record<string, string> }

const AGENT_ENV = { MUSTER_AGENT_HOST: '127.0.0.1', MUSTER_AGENT_HEARTBEAT_MS: '300' }

async function json<T>(args: string[], env: Record<string, string>): Promise<T> {
  const r = await runMuster([...args, '--json'], { env })
  if (r.code !== 0) throw new Error(`muster ${args.join(' ')} exited ${r.code}: ${r.stderr}`)
  return JSON.parse(r.stdout) as T
}

const joinArgs = (s: Listener, work: string, port: number) => ['worker', 'join', '--platform-url', s.enrollUrl, '--node-id', 'w1', '--platform-fingerprint', s.fingerprint, '--address', '127.0.0.1', '--port', String(port), '--data-dir', work]

async function doctor(work: string, root: string): Promise<{ code: number; checks: Record<string, Check>; stdout: string }> {
  const r = await runMuster(['doctor', '--data-dir', work, '--root', root, '--json'])
  const report = JSON.parse(r.stdout) as { checks: Check[] }
  return { code: r.code, checks: Object.fromEntries(report.checks.map((c) => [c.name, c])), stdout: r.stdout }
}

/** A check's status and words (not toMatchObject with expect.stringContaining: Bun 1.4.4 then breaks the object's string for the next expect). */
function expectCheck(check: Check | undefined, status: string, ...words: string[]): void {
  expect(check?.status).toBe(status)
  for (const w of words) expect(check?.message).toContain(w)
}

const nodeState = async (s: Listener, name: string) => (await json<{ nodes: { name: string; state: string }[] }>(['nodes', 'list'], s.env)).nodes.find((n) => n.name === name)?.state

/** Waits for the Agent to end by itself; its exit status. */
async function exited(agent: Daemon, what: string): Promise<number> {
  return waitFor(() => (agent.proc.exitCode === null ? undefined : agent.proc.exitCode + 1), { timeoutMs: 60_000, what }).then((c) => c - 1)
}

describe('a node’s state is the truth', () => {
  test('revoked, rebound, removed, unknown: doctor fails naming the way back, the Agent exits 3, worker join enrolls again', { timeout: 240_000 }, async () => {
    using dir = tmpDir()
    const work = `${dir.path}/worker`
    const root = `${dir.path}/root` // no install receipt there
    await using serve = await startServeWithListener(`${dir.path}/platform`)
    const port = await freePort()
    const first = (await json<{ token: string }>(['nodes', 'enroll-token', 'w1'], serve.env)).token
    expect((await runMuster(joinArgs(serve, work, port), { stdin: first })).code).toBe(0)
    let agent = await startMuster(['agent', '--data-dir', work], { env: AGENT_ENV })
    try {
      await waitFor(async () => (await nodeState(serve, 'w1')) === 'ready', { timeoutMs: 45_000, what: 'w1 ready' })
      const healthy = await doctor(work, root)
      expect(healthy.code).toBe(0)
      expectCheck(healthy.checks.credential, 'ok', 'shows the node as ready')

      // 1. revoked: the Agent stops with status 3 and one line; doctor fails and names `nodes rebind`
      expect((await runMuster(['nodes', 'revoke', 'w1'], { env: serve.env })).code).toBe(0)
      expect(await exited(agent, 'the revoked Agent to exit')).toBe(3)
      const last = agent.log().trimEnd().split('\n').at(-1)!
      expect(last).toStartWith("muster agent: the Platform refuses this node's credential for good: an operator revoked this node.")
      expect(last).toContain(`on the Platform, \`muster nodes rebind w1\` prints a token; on this machine, \`muster worker join --platform-url ${serve.enrollUrl} --node-id w1 --platform-fingerprint ${serve.fingerprint} --data-dir ${work}\``)
      expect(agent.log().match(/refuses this node's credential/g)).toHaveLength(1)
      const revoked = await doctor(work, root)
      expect(revoked.code).toBe(1)
      expectCheck(revoked.checks.credential, 'fail', 'an operator revoked this node')
      expect(revoked.checks.credential!.message).toContain('`muster nodes rebind w1`')

      // 2. rebound: doctor says so; `worker join` with the new token enrolls again (a new agent key), the Agent comes back
      const rebound = (await json<{ token: string }>(['nodes', 'rebind', 'w1'], serve.env)).token
      const afterRebind = await doctor(work, root)
      expectCheck(afterRebind.checks.credential, 'fail', 'an operator rebound this name')
      const oldCert = readFileSync(`${work}/worker/agent.crt`, 'utf8')
      const again = await runMuster(joinArgs(serve, work, port), { stdin: rebound })
      expect({ code: again.code, stderr: again.stderr }).toEqual({ code: 0, stderr: expect.any(String) })
      expect(again.stdout).not.toContain('nothing to do')
      expect(again.stderr + again.stdout).toContain('The old credential was dead (rebound); joined again as w1')
      expect(readFileSync(`${work}/worker/agent.crt`, 'utf8')).not.toBe(oldCert)
      const repeat = await runMuster(joinArgs(serve, work, port), { stdin: rebound })
      expect(repeat.stderr + repeat.stdout).toContain('its credential works; nothing to do')
      agent = await startMuster(['agent', '--data-dir', work], { env: AGENT_ENV })
      await waitFor(async () => (await nodeState(serve, 'w1')) === 'ready', { timeoutMs: 45_000, what: 'w1 ready again' })
      expect((await doctor(work, root)).code).toBe(0)

      // 3. removed: the Agent exits 3; doctor names an enroll-token as the way back
      expect((await runMuster(['nodes', 'remove', 'w1', '--force'], { env: serve.env })).code).toBe(0)
      expect(await exited(agent, 'the removed Agent to exit')).toBe(3)
      expect(agent.log()).toContain('an operator removed this node')
      const removed = await doctor(work, root)
      expect(removed.code).toBe(1)
      expectCheck(removed.checks.credential, 'fail', 'an operator removed this node')
      expect(removed.checks.credential!.message).toContain('`muster nodes enroll-token w1`')

      // 4. unknown: a credential this Platform never issued (its MAC altered) learns nothing but "not recognised"
      const credential = readFileSync(`${work}/worker/node-credential`, 'utf8').trim()
      writeFileSync(`${work}/worker/node-credential`, `${credential.slice(0, -4)}AAAA\n`)
      const unknown = await doctor(work, root)
      expect(unknown.code).toBe(1)
      expect(unknown.checks.credential!.message).toContain('the Platform does not recognise this credential')
    } finally {
      await agent.stop()
    }
  })

  test('a new node reaches ready without passing through unreachable', { timeout: 120_000 }, async () => {
    using dir = tmpDir()
    const work = `${dir.path}/worker`
    // A long probe interval: a failed first probe would show unreachable for a minute.
    await using serve = await startServeWithListener(`${dir.path}/platform`, [], { MUSTER_PROBE_INTERVAL_MS: '60000' })
    const token = (await json<{ token: string }>(['nodes', 'enroll-token', 'w1'], serve.env)).token
    expect((await runMuster(joinArgs(serve, work, await freePort()), { stdin: token })).code).toBe(0)
    // The Platform's probe loop ticks every second: give it three ticks with the node enrolled and no Agent yet.
    await Bun.sleep(3000)
    const states: string[] = []
    await using agent = await startMuster(['agent', '--data-dir', work], { env: AGENT_ENV })
    await waitFor(
      async () => {
        const res = await fetch(`${serve.url}/api/v1/nodes`, { headers: { authorization: `Bearer ${serve.env.MUSTER_TOKEN}` } })
        const state = ((await res.json()) as { nodes: { name: string; state: string }[] }).nodes.find((n) => n.name === 'w1')?.state ?? 'absent'
        if (states.at(-1) !== state) states.push(state)
        return state === 'ready'
      },
      { timeoutMs: 30_000, intervalMs: 20, what: 'w1 ready' },
    )
    expect(states).not.toContain('unreachable')
    expect(states.at(-1)).toBe('ready')
    expect(agent.proc.exitCode).toBeNull()
  })

  test('after a Platform restart the Agent heartbeats again within 10 s; an outage never stops it', { timeout: 180_000 }, async () => {
    using dir = tmpDir()
    const work = `${dir.path}/worker`
    const data = `${dir.path}/platform`
    const ports = ['--port', String(await freePort()), '--enrollment-port', String(await freePort())]
    const serve = await startServeWithListener(data, ports)
    const token = (await json<{ token: string }>(['nodes', 'enroll-token', 'w1'], serve.env)).token
    expect((await runMuster(joinArgs(serve, work, await freePort()), { stdin: token })).code).toBe(0)
    await using agent = await startMuster(['agent', '--data-dir', work], { env: AGENT_ENV })
    await agent.waitForLog(/node w1 is (enrolled|ready)/)
    expect(await serve.stop()).toBe(0)
    // A 15 s outage: long enough for an uncapped back-off to grow past 30 s.
    await agent.waitForLog(/heartbeat failed \(1x\)/)
    await Bun.sleep(15_000)
    await using back = await startServe(data, ['--enrollment-port', ports[3]!, '--enrollment-address', '127.0.0.1', '--port', ports[1]!])
    const listening = Date.now()
    await agent.waitForLog(/the Platform answers again after \d+ failed heartbeat/, 20_000)
    const after = Date.now() - listening
    expect(after).toBeLessThan(10_000)
    expect(agent.proc.exitCode).toBeNull() // a transient failure is never "for good"
    expect(back.log()).not.toContain('refuses')
  })
})
