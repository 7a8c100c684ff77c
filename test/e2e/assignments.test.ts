// The Agent's verification loop through dist/muster (docs/workloads.md): a man in the
// middle on the plain-http Platform API hands a running Agent a document it
// must not run — another node's genuine document, or its own edited after
// signing. The Agent refuses it, runs nothing, and reports nothing running.
// (Heartbeat answers are not signed: the middle can make the Agent fetch, never
// make it run what the document's signature does not cover.)
import { describe, expect, test } from 'bun:test'
import { chmodSync, existsSync, mkdirSync } from 'node:fs'
import { runMuster, startMuster, startServe } from '../helpers/binary.ts'
import { freePort } from '../helpers/node-side.ts'
import { ASSIGNMENTS_PATH, platformProxy, type PlatformProxy } from '../helpers/proxy.ts'
import { tmpDir, waitFor } from '../helpers/tmp.ts'
import { newCert, withProof } from '../helpers/certs.ts'
import { VERSION } from '../../src/version.ts'
import type { SignedAssignments } from '../../src/wire/projects.ts'

/** A Platform (no local node) whose public URL is the proxy, and w1 joined through its enrollment listener; the Agent is not started. */
async function setUp(dir: string, proxy: PlatformProxy) {
  const data = `${dir}/platform`
  const serve = await startServe(data, ['--enrollment-port', '0', '--enrollment-address', '127.0.0.1', '--no-local-node', '--public-url', proxy.url], { MUSTER_PROBE_INTERVAL_MS: '300' })
  proxy.target = serve.url
  const [, enrollUrl, fingerprint] = (await serve.waitForLog(/enrollment listener on (https:\/\/\S+) .*fingerprint (sha256:[0-9a-f]{64})/)) as unknown as [string, string, string]
  const { token: apiToken } = JSON.parse((await runMuster(['admin', 'api-token', '--data-dir', data, '--json'])).stdout) as { token: string }
  const env = { MUSTER_URL: serve.url, MUSTER_TOKEN: apiToken }
  const { token } = JSON.parse((await runMuster(['nodes', 'enroll-token', 'w1', '--json'], { env })).stdout) as { token: string }
  const work = `${dir}/w1`
  const joined = await runMuster(['worker', 'join', '--node-id', 'w1', '--platform-url', enrollUrl, '--platform-fingerprint', fingerprint, '--address', '127.0.0.1', '--port', String(await freePort()), '--data-dir', work], { stdin: token })
  expect(joined.code).toBe(0)
  const startAgent = () => startMuster(['agent', '--data-dir', work], { env: { MUSTER_AGENT_HEARTBEAT_MS: '200', MUSTER_AGENT_HOST: '127.0.0.1' } })
  const deploy = async (name: string, command: string[]) => expect((await runMuster(['projects', 'deploy', name, '--replicas', '1', '--cpu', '10', '--', ...command], { env })).code).toBe(0)
  return { serve, env, startAgent, deploy }
}

const heartbeats = (proxy: PlatformProxy) => proxy.passed.filter((x) => x.path === '/api/v1/nodes/register')

/** Where replicas (each project runs as a uid of its own) can leave a marker: a sticky world-writable folder they can reach. */
function markers(dir: string): string {
  chmodSync(dir, 0o711)
  mkdirSync(`${dir}/m`)
  chmodSync(`${dir}/m`, 0o1777)
  return `${dir}/m`
}

/** After the Agent logged the refusal: two more heartbeats, none reporting a replica; the marker never written. */
async function expectNothingRan(proxy: PlatformProxy, agentLog: () => string, reason: string, marker: string) {
  await waitFor(() => agentLog().includes('refused assignments') || existsSync(marker), { what: 'the Agent to handle the document', timeoutMs: 45_000 })
  const seen = heartbeats(proxy).length
  await waitFor(() => heartbeats(proxy).length >= seen + 2, { what: 'two heartbeats after the refusal', timeoutMs: 45_000 })
  expect(proxy.passed.some((x) => x.path === ASSIGNMENTS_PATH && x.intercepted)).toBe(true)
  expect(agentLog()).toContain(`refused assignments: ${reason}`)
  expect(heartbeats(proxy).map((h) => (h.body as { replicas?: unknown[] }).replicas)).toEqual(heartbeats(proxy).map(() => []))
  expect(existsSync(marker)).toBe(false)
}

describe('a running Agent refuses assignments it cannot verify', () => {
  test("another node's genuine document is refused and nothing runs", { timeout: 180_000 }, async () => {
    using dir = tmpDir()
    using proxy = platformProxy()
    const { serve, env, startAgent, deploy } = await setUp(dir.path, proxy)
    await using _serve = serve
    // w2: a node with a credential and capacity, ready before w1 runs, so the project lands there.
    const { token } = JSON.parse((await runMuster(['nodes', 'enroll-token', 'w2', '--json'], { env })).stdout) as { token: string }
    const w2Cert = await newCert('w2')
    const enrolled = await fetch(`${serve.url}/api/v1/nodes/enroll`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(withProof({ token, nodeId: 'w2', certPem: w2Cert.certPem, version: VERSION }, w2Cert.keyPem)) })
    const { credential } = (await enrolled.json()) as { credential: string }
    const w2 = { authorization: `Bearer ${credential}`, 'content-type': 'application/json' }
    expect((await fetch(`${serve.url}/api/v1/nodes/register`, { method: 'POST', headers: w2, body: JSON.stringify({ version: VERSION, capacity: { cpuMillis: 1000, memoryMB: 1024 } }) })).status).toBe(200)
    const marker = `${markers(dir.path)}/ran`
    await deploy('evil', ['sh', '-c', `touch ${marker}; exec sleep 300`])
    const forW2 = (await (await fetch(`${serve.url}${ASSIGNMENTS_PATH}`, { headers: w2 })).json()) as SignedAssignments
    expect(forW2.payload).toMatchObject({ node: 'w2', replicas: [{ project: 'evil' }] })

    // The middle serves w2's document as w1's, and makes w1's heartbeat answers announce its revision so the Agent asks for it.
    proxy.intercept = async (req, url, sent) => {
      if (url.pathname === ASSIGNMENTS_PATH) return Response.json(forW2)
      if (url.pathname !== '/api/v1/nodes/register') return undefined
      const headers = new Headers(req.headers)
      headers.delete('host')
      const upstream = await fetch(`${proxy.target}${url.pathname}`, { method: 'POST', headers, body: sent })
      const answer = (await upstream.json()) as { assignmentRevision?: number }
      if (upstream.ok) answer.assignmentRevision = forW2.payload.revision
      return Response.json(answer, { status: upstream.status })
    }
    await using agent = await startAgent()
    await expectNothingRan(proxy, () => agent.log(), 'document is for node w2, not w1', marker)
  })

  test('its own document edited after signing is refused and nothing runs; the genuine one then runs', { timeout: 180_000 }, async () => {
    using dir = tmpDir()
    using proxy = platformProxy()
    const { serve, env, startAgent, deploy } = await setUp(dir.path, proxy)
    await using _serve = serve
    const m = markers(dir.path)
    const forged = `${m}/forged`
    const genuine = `${m}/genuine`
    // Every assignments answer is passed on with its replicas' commands swapped; the signature stays.
    proxy.intercept = async (req, url) => {
      if (url.pathname !== ASSIGNMENTS_PATH) return undefined
      const doc = (await (await fetch(`${proxy.target}${url.pathname}${url.search}`, { headers: req.headers })).json()) as SignedAssignments
      for (const r of doc.payload.replicas) r.command = ['sh', '-c', `touch ${forged}; exec sleep 300`]
      return Response.json(doc)
    }
    await using agent = await startAgent()
    await waitFor(async () => (JSON.parse((await runMuster(['nodes', 'list', '--json'], { env })).stdout) as { nodes: { name: string; state: string }[] }).nodes.find((n) => n.name === 'w1')?.state === 'ready', { what: 'w1 ready', timeoutMs: 30_000 })
    const before = agent.log().split('refused assignments').length
    await deploy('app', ['sh', '-c', `touch ${genuine}; exec sleep 300`])
    await waitFor(() => agent.log().split('refused assignments').length > before || existsSync(forged), { what: 'the edited document handled', timeoutMs: 30_000 })
    await expectNothingRan(proxy, () => agent.log(), 'bad signature', forged)
    expect(existsSync(genuine)).toBe(false)
    // The same Agent runs the genuine document once the middle stops editing (it retries after a refusal).
    proxy.intercept = undefined
    await waitFor(() => existsSync(genuine), { what: 'the genuine replica to run', timeoutMs: 30_000 })
    expect(existsSync(forged)).toBe(false)
  })
})
