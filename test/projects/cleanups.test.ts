// Cleanups and ownership around workloads, observed rather than assumed
//: a log follow belongs to whoever started it; a log request
// is gone from the store once its tail was read; the Platform's own node
// stops its replicas when the Platform stops (the processes are gone).
import { describe, expect, test } from 'bun:test'
import { startPlatform, type TestPlatform } from '../helpers/platform.ts'
import { enrollRaw, newCert } from '../helpers/certs.ts'
import { waitFor } from '../helpers/tmp.ts'
import { VERSION } from '../../src/version.ts'
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'

/** The process exists and has not exited (a zombie waiting for its parent counts as gone). */
const alive = (pid: number) => {
  try {
    return !/\) [ZX] /.test(readFileSync(`/proc/${pid}/stat`, 'utf8'))
  } catch {
    return false
  }
}

describe('log relay', () => {
  test("a follow cursor is its starter's: another operator's token presenting it is 404, and the starter goes on", { timeout: 60_000 }, async () => {
    await using p = await startPlatform({ localNode: true })
    try {
      await p.client.projects.deploy({ name: 'ticker', replicas: 1, cpu: 10, memory: 10, command: ['sh', '-c', 'while true; do echo tick; sleep 0.2; done'] })
      const a = (await p.platform.auth.mintApiToken({ name: 'op-a', role: 'operator' })).token
      const b = (await p.platform.auth.mintApiToken({ name: 'op-b', role: 'operator' })).token
      const get = (token: string, q: string) => fetch(`${p.url}/api/v1/projects/ticker/logs?${q}`, { headers: { authorization: `Bearer ${token}` } })
      const started = await waitFor(async () => {
        const r = await get(a, 'follow=true&tail=1')
        return r.status === 200 ? ((await r.json()) as { cursor: string }) : null
      }, { what: 'a follow started by operator a' })
      const stolen = await get(b, `cursor=${encodeURIComponent(started.cursor)}`)
      expect(stolen.status).toBe(404)
      expect(await stolen.text()).toContain('started by someone else')
      const own = await get(a, `cursor=${encodeURIComponent(started.cursor)}`)
      expect(own.status).toBe(200)
    } finally {
      await p.client.projects.remove('ticker')
    }
  })

  test('a tail leaves no log request behind once the node answered', async () => {
    await using p = await startPlatform({ remoteDispatch: true, logWaitMs: 20_000 })
    const e = await p.client.nodes.createEnrollment({ nodeId: 'w1' })
    const cert = await newCert('w1')
    const enrolled = await enrollRaw(p.url, { token: e.token, nodeId: 'w1', certPem: cert.certPem, version: VERSION })
    const { credential } = (await enrolled.json()) as { credential: string }
    const node = (method: string, path: string, body?: unknown) =>
      fetch(`${p.url}${path}`, { method, headers: { authorization: `Bearer ${credential}`, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) })
    expect((await node('POST', '/api/v1/nodes/register', { version: VERSION, capacity: { cpuMillis: 4000, memoryMB: 4096 } })).status).toBe(200)
    await p.client.projects.deploy({ name: 'web', replicas: 1, cpu: 100, memory: 64, command: ['sleep', '60'] })
    await waitFor(async () => (await p.client.projects.show('web')).placements[0]?.node === 'w1', { what: 'web placed on w1' })
    // the operator asks; the node (this test) picks the request up and answers it
    const asked = p.client.projects.logs('web', { tail: 5 })
    const request = await waitFor(async () => {
      const r = (await (await node('GET', '/api/v1/nodes/self/log-requests')).json()) as { requests: { payload: { id: string } }[] }
      return r.requests[0]?.payload
    }, { what: 'the log request reaching the node' })
    expect((await node('POST', `/api/v1/nodes/self/logs/${request.id}`, { seq: 0, lines: ['hello'], truncated: false })).status).toBe(200)
    expect((await asked).lines).toEqual(['hello'])
    const left = await p.platform.store.all('SELECT id FROM log_requests')
    expect(left).toEqual([])
    expect(await p.platform.store.all('SELECT request FROM log_chunks')).toEqual([])
  })
})

describe("the Platform's own node", () => {
  test('stopping the Platform stops its replicas: the process is gone', { timeout: 60_000 }, async () => {
    const p: TestPlatform = await startPlatform({ localNode: true })
    let pid = 0
    try {
      await p.client.projects.deploy({ name: 'sleeper', replicas: 1, cpu: 10, memory: 10, command: ['sleep', '300'] })
      const running = await waitFor(() => p.platform.projects.local?.status().find((s) => s.project === 'sleeper' && s.state === 'running'), { what: 'the replica running on local' })
      expect(running).toBeTruthy()
      // the runner records what it started (for the next Platform to adopt): the PID to watch
      pid = await waitFor(() => {
        const f = join(p.dataDir, 'platform/local-node/replicas.json')
        if (!existsSync(f)) return undefined
        return (JSON.parse(readFileSync(f, 'utf8')) as { replicas: { project: string; pid: number }[] }).replicas.find((r) => r.project === 'sleeper')?.pid
      }, { what: 'the replica recorded with its PID' })
      expect(alive(pid)).toBe(true)
    } finally {
      await p.close()
    }
    await waitFor(() => !alive(pid), { timeoutMs: 15_000, what: `replica ${pid} gone after the Platform stopped` })
  })
})
