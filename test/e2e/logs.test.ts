// Workload logs through dist/muster: a replica's stdout and
// stderr read from a node the Platform never dials (heartbeat-only), --follow,
// the refusals (a viewer; a node credential on the operator route; another
// node answering a request that is not its own), and an answer that survives
// the node's Agent restarting while the request waits.
import { Database } from 'bun:sqlite'
import { describe, expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { runMuster, startMuster, startServeWithListener, musterBin, type Daemon } from '../helpers/binary.ts'
import { freePort } from '../helpers/node-side.ts'
import { tmpDir, waitFor } from '../helpers/tmp.ts'

type Env = Record<string, string>
interface Logs {
  project: string
  replica: number
  node: string
  lines: string[]
  truncated: boolean
}

const AGENT_ENV = { MUSTER_AGENT_HOST: '127.0.0.1', MUSTER_AGENT_HEARTBEAT_MS: '300' }

async function joinHeartbeatOnly(dir: string, node: string, serve: { enrollUrl: string; fingerprint: string; env: Env }): Promise<{ data: string; agent: Daemon }> {
  const { token } = JSON.parse((await runMuster(['nodes', 'enroll-token', node, '--json'], { env: serve.env })).stdout) as { token: string }
  const data = `${dir}/${node}`
  const joined = await runMuster(['worker', 'join', '--platform-url', serve.enrollUrl, '--node-id', node, '--platform-fingerprint', serve.fingerprint, '--heartbeat-only', '--port', String(await freePort()), '--data-dir', data], { env: { MUSTER_ENROLLMENT_TOKEN: token } })
  expect(joined.code).toBe(0)
  return { data, agent: await startMuster(['agent', '--data-dir', data], { env: AGENT_ENV }) }
}

const lineNumbers = (lines: string[]) => lines.map((l) => Number(l.match(/^out (\d+)$/)?.[1])).filter((n) => n > 0)

describe('projects logs through dist/muster', () => {
  test('a heartbeat-only node relays its replica\'s output; --follow; viewers and other nodes are refused', { timeout: 240_000 }, async () => {
    using dir = tmpDir()
    await using serve = await startServeWithListener(`${dir.path}/platform`, ['--no-local-node'])
    const agents: Daemon[] = []
    try {
      const w1 = await joinHeartbeatOnly(dir.path, 'w1', serve)
      const w2 = await joinHeartbeatOnly(dir.path, 'w2', serve)
      agents.push(w1.agent, w2.agent)
      await waitFor(async () => {
        const list = JSON.parse((await runMuster(['nodes', 'list', '--json'], { env: serve.env })).stdout) as { nodes: { name: string; state: string; url: string | null }[] }
        return ['w1', 'w2'].every((n) => list.nodes.find((x) => x.name === n)?.state === 'ready')
      }, { timeoutMs: 45_000, what: 'both heartbeat-only workers ready' })
      // w1 runs the one replica; w2 stays empty
      expect((await runMuster(['nodes', 'drain', 'w2'], { env: serve.env })).code).toBe(0)
      const deploy = await runMuster(['projects', 'deploy', 'talker', '--replicas', '1', '--', 'sh', '-c', 'i=0; while true; do i=$((i+1)); echo "out $i"; echo "err $i" >&2; sleep 0.1; done'], { env: serve.env })
      expect(deploy.code).toBe(0)
      await waitFor(async () => (JSON.parse((await runMuster(['projects', 'show', 'talker', '--json'], { env: serve.env })).stdout) as { placements: { node: string; state: string }[] }).placements[0]?.state === 'running', { timeoutMs: 45_000, what: 'talker running' })
      await waitFor(() => readFileSync(`${w1.data}/worker/logs/talker-0.log`, 'utf8').includes('out 20'), { what: 'some output on w1' })

      // The tail, with the exact shape the dashboard reads; stdout and stderr both.
      const r = await runMuster(['projects', 'logs', 'talker', '--tail', '6', '--json'], { env: serve.env, timeoutMs: 60_000 })
      expect(r.code).toBe(0)
      const logs = JSON.parse(r.stdout) as Logs
      expect(Object.keys(logs).sort()).toEqual(['lines', 'node', 'project', 'replica', 'truncated'])
      expect(logs).toMatchObject({ project: 'talker', replica: 0, node: 'w1', truncated: true })
      expect(logs.lines).toHaveLength(6)
      expect(logs.lines.some((l) => /^out \d+$/.test(l))).toBe(true)
      expect(logs.lines.some((l) => /^err \d+$/.test(l))).toBe(true)
      // The human form: just the lines.
      const plain = await runMuster(['projects', 'logs', 'talker', '--tail', '3'], { env: serve.env, timeoutMs: 60_000 })
      expect(plain.code).toBe(0)
      expect(plain.stdout.trim().split('\n')).toHaveLength(3)
      const last = Math.max(...lineNumbers(logs.lines))

      // --follow prints lines written after it started, until interrupted.
      const follow = Bun.spawn([await musterBin(), 'projects', 'logs', 'talker', '--follow', '--tail', '1'], { env: { ...process.env, ...serve.env }, stdout: 'pipe', stderr: 'pipe' })
      let followed = ''
      const pump = (async () => {
        for await (const c of follow.stdout) followed += new TextDecoder().decode(c)
      })()
      try {
        await waitFor(() => lineNumbers(followed.split('\n')).some((n) => n > last + 30), { timeoutMs: 60_000, what: `followed lines past out ${last + 30}` })
      } finally {
        follow.kill('SIGINT')
      }
      expect(await follow.exited).toBe(0)
      await pump
      const seen = lineNumbers(followed.split('\n'))
      // in order, and nothing in the middle lost
      expect(seen).toEqual([...seen].sort((x, y) => x - y))
      expect(seen.at(-1)! - seen[0]! + 1).toBe(seen.length)

      // A viewer may not read logs (they carry what env values hold, which viewers never see).
      const viewer = JSON.parse((await runMuster(['admin', 'api-token', '--data-dir', `${dir.path}/platform`, '--role', 'viewer', '--name', 'v', '--json'])).stdout) as { token: string }
      const refused = await runMuster(['projects', 'logs', 'talker'], { env: { ...serve.env, MUSTER_TOKEN: viewer.token } })
      expect(refused.code).toBe(1)
      expect(refused.stderr).toContain('server.projects.manage')
      expect(refused.stdout).toBe('')

      // A node credential is no operator.
      const w2Credential = readFileSync(`${w2.data}/worker/node-credential`, 'utf8').trim()
      const asNode = await fetch(`${serve.url}/api/v1/projects/talker/logs`, { headers: { authorization: `Bearer ${w2Credential}` } })
      expect(asNode.status).toBe(403)

      // w1's Agent is away while an operator asks: the request waits in the store. w2 (which holds its own
      // credential and learns the request's id) can neither fetch it nor answer it with lines of its own.
      await w1.agent.stopLeavingReplicas('SIGTERM')
      const asked = runMuster(['projects', 'logs', 'talker', '--tail', '2', '--json'], { env: serve.env, timeoutMs: 60_000 })
      const id = await waitFor(() => {
        const db = new Database(`${dir.path}/platform/muster.db`, { readonly: true })
        try {
          return db.query<{ id: string }, []>("SELECT id FROM log_requests WHERE node = 'w1' AND follow = 0").get()?.id
        } finally {
          db.close()
        }
      }, { what: 'the waiting request' })
      const nodeCall = (path: string, init: RequestInit = {}) => fetch(`${serve.url}${path}`, { ...init, headers: { authorization: `Bearer ${w2Credential}`, 'content-type': 'application/json' } })
      expect(((await (await nodeCall('/api/v1/nodes/self/log-requests')).json()) as { requests: unknown[] }).requests).toEqual([])
      const forged = await nodeCall(`/api/v1/nodes/self/logs/${id}`, { method: 'POST', body: JSON.stringify({ seq: 0, lines: ['forged by w2'], truncated: false }) })
      expect(forged.status).toBe(404)
      // w1's next Agent adopts the replica and answers.
      const again = await startMuster(['agent', '--data-dir', w1.data], { env: AGENT_ENV })
      agents.push(again)
      const answer = await asked
      expect(answer.code).toBe(0)
      const relayed = JSON.parse(answer.stdout) as Logs
      expect(relayed.node).toBe('w1')
      expect(relayed.lines).toHaveLength(2)
      expect(relayed.lines.join('\n')).not.toContain('forged')
      // The answered request leaves nothing in the store; what the relay keeps meanwhile is sealed.
      const db = new Database(`${dir.path}/platform/muster.db`, { readonly: true })
      try {
        expect(db.query<{ n: number }, [string]>('SELECT COUNT(*) AS n FROM log_requests WHERE id = ?').get(id)!.n).toBe(0)
        for (const row of db.query<{ sealed: Uint8Array }, []>('SELECT sealed FROM log_chunks').all()) expect(Buffer.from(row.sealed).toString('latin1')).not.toContain('out ')
      } finally {
        db.close()
      }
    } finally {
      for (const a of agents) await a.stop()
    }
  })

  test('a node that can be dialled is told at once: the tail comes well before its next heartbeat', { timeout: 180_000 }, async () => {
    using dir = tmpDir()
    await using serve = await startServeWithListener(`${dir.path}/platform`, ['--no-local-node'])
    const { token } = JSON.parse((await runMuster(['nodes', 'enroll-token', 'd1', '--json'], { env: serve.env })).stdout) as { token: string }
    const data = `${dir.path}/d1`
    const joined = await runMuster(['worker', 'join', '--platform-url', serve.enrollUrl, '--node-id', 'd1', '--platform-fingerprint', serve.fingerprint, '--address', '127.0.0.1', '--port', String(await freePort()), '--data-dir', data], { env: { MUSTER_ENROLLMENT_TOKEN: token } })
    expect(joined.code).toBe(0)
    const fast = await startMuster(['agent', '--data-dir', data], { env: AGENT_ENV })
    let slow: Daemon | undefined
    try {
      expect((await runMuster(['projects', 'deploy', 'chatty', '--replicas', '1', '--', 'sh', '-c', 'while true; do echo hello; sleep 0.2; done'], { env: serve.env })).code).toBe(0)
      await waitFor(() => readFileSync(`${data}/worker/logs/chatty-0.log`, 'utf8').includes('hello\nhello\n'), { timeoutMs: 45_000, what: 'chatty running on d1' })
      // The next Agent adopts the replica and heartbeats once a minute: only the nudge can bring the request sooner.
      await fast.stopLeavingReplicas('SIGTERM')
      slow = await startMuster(['agent', '--data-dir', data], { env: { ...AGENT_ENV, MUSTER_AGENT_HEARTBEAT_MS: '60000' } })
      await slow.waitForLog(/replica chatty\/0 \(pid \d+\) is still running: adopted/)
      // A health probe that lands while the new Agent starts (a busy machine) marks the node unreachable
      // until its next heartbeat, a minute away: wait for that rather than fail.
      await slow.waitForLog(/node d1 is ready/, 150_000)
      const t0 = performance.now()
      const r = await runMuster(['projects', 'logs', 'chatty', '--tail', '2', '--json'], { env: serve.env, timeoutMs: 60_000 })
      const took = performance.now() - t0
      expect(r.code).toBe(0)
      expect((JSON.parse(r.stdout) as Logs).lines).toEqual(['hello', 'hello'])
      expect(took).toBeLessThan(15_000)
    } finally {
      await fast.stop()
      await slow?.stop()
    }
  })
})
