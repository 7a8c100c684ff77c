// A compromised node cannot fill the store through the log relay
// (docs/workloads.md, "Logs"): while an operator follows a replica's log, the
// node used to be able to upload ~900 KB chunks at any seq up to 1e9, each
// one kept. Now the store keeps at most so much unread output per request and
// per project, refuses the rest (429) until the reader catches up, keeps no
// second chunk for a tail, and drops what was read or whose request ended.
// The node's part is played over its real routes with its real credential.
import { expect, test } from 'bun:test'
import { createClient } from '../../src/client/index.ts'
import type { MusterError } from '../../src/errors.ts'
import { LOG_CHUNK_CAPS } from '../../src/projects/logs.ts'
import { VERSION } from '../../src/version.ts'
import { enrollRaw, newCert } from '../helpers/certs.ts'
import { startPlatform } from '../helpers/platform.ts'
import { waitFor } from '../helpers/tmp.ts'

test('a node uploading ~900 KB chunks at any seq is held to the caps; the reader still gets its lines; read and ended chunks are dropped', { timeout: 120_000 }, async () => {
  await using p = await startPlatform({ remoteDispatch: true, logWaitMs: 2000 })
  const { token } = await p.client.nodes.createEnrollment({ nodeId: 'w1' })
  const r = await enrollRaw(p.url, { token, nodeId: 'w1', certPem: (await newCert('w1')).certPem, version: VERSION })
  const { credential } = (await r.json()) as { credential: string }
  const node = createClient({ url: p.url, token: credential })
  await node.nodes.register({ version: VERSION, capacity: { cpuMillis: 4000, memoryMB: 4096 } })
  await p.client.projects.deploy({ name: 'web', replicas: 2, command: ['sleep', '300'], cpu: 10, memory: 10 })
  await waitFor(async () => (await p.client.projects.show('web')).placements.filter((x) => x.node === 'w1').length === 2, { what: 'web placed on w1' })
  const auth = { headers: { authorization: `Bearer ${p.token}` } }
  const requestFor = (replica: number) =>
    waitFor(async () => (await node.projects.logRequests()).requests.find((d) => d.payload.replica === replica)?.payload.id, { what: `the log request for replica ${replica}` })
  const pending = async (where = '1 = 1', ...args: (string | number)[]) =>
    Number((await p.platform.store.get<{ n: number }>(`SELECT COALESCE(SUM(LENGTH(c.sealed)), 0) AS n FROM log_chunks c JOIN log_requests r ON r.id = c.request WHERE ${where}`, ...args))?.n ?? 0)
  // ~900 KB of output in one upload (the API takes 1 MiB bodies)
  const big = Array.from({ length: 225 }, (_, i) => `${String(i).padStart(4, '0')} ${'x'.repeat(4000)}`)
  const upload = (id: string, seq: number) => node.projects.sendLogs(id, { seq, lines: big, truncated: false }).then(() => 'ok', (e: MusterError) => e.code)

  // The operator follows replica 0; the node answers with its tail, then floods.
  const first = fetch(`${p.url}/api/v1/projects/web/logs?follow=true&tail=10&replica=0`, auth)
  const x = await requestFor(0)
  await node.projects.sendLogs(x, { seq: 0, lines: ['TAIL'], truncated: false })
  const tail = (await (await first).json()) as { lines: string[]; cursor: string }
  expect(tail.lines).toEqual(['TAIL'])
  const answers: string[] = []
  for (let i = 0; i < 40; i++) answers.push(await upload(x, 1 + Math.floor(Math.random() * 1e9)))
  expect(answers.filter((a) => a === 'ok').length).toBeGreaterThan(0)
  expect(answers.slice(-10)).toEqual(Array(10).fill('rate-limited'))
  expect(await pending('c.request = ?1', x)).toBeLessThanOrEqual(LOG_CHUNK_CAPS.bytesPerRequest)
  expect(await pending('c.request = ?1', x)).toBeGreaterThan(LOG_CHUNK_CAPS.bytesPerRequest / 2)

  // A second follow of the same project: the project's cap holds across its requests.
  const second = fetch(`${p.url}/api/v1/projects/web/logs?follow=true&tail=10&replica=1`, auth)
  const y = await requestFor(1)
  await node.projects.sendLogs(y, { seq: 0, lines: ['TAIL-1'], truncated: false })
  await (await second).json()
  for (let i = 0; i < 40; i++) await upload(y, 1 + Math.floor(Math.random() * 1e9))
  expect(await pending("r.project = 'web'")).toBeLessThanOrEqual(LOG_CHUNK_CAPS.bytesPerProject)

  // A tail keeps its one chunk only.
  const tailOnly = p.client.projects.logs('web', { replica: 0 }).catch((e: MusterError) => e.code)
  const t = await waitFor(async () => (await node.projects.logRequests()).requests.find((d) => !d.payload.follow)?.payload.id, { what: 'the tail request' })
  expect(await upload(t, 7)).toBe('invalid-request')
  await node.projects.sendLogs(t, { seq: 0, lines: ['ONE'], truncated: false })
  expect(await tailOnly).toMatchObject({ lines: ['ONE'] })

  // The reader moves on: what it read is dropped, and the node may send again.
  const next = (await (await fetch(`${p.url}/api/v1/projects/web/logs?cursor=${tail.cursor}`, auth)).json()) as { lines: string[]; cursor: string }
  expect(next.lines.length).toBeGreaterThan(0)
  const after = fetch(`${p.url}/api/v1/projects/web/logs?cursor=${next.cursor}`, auth)
  await waitFor(async () => (await pending('c.request = ?1', x)) === 0, { what: 'the chunks read dropped' })
  expect(await upload(x, 1e9)).toBe('ok')
  expect(((await (await after).json()) as { lines: string[] }).lines).toHaveLength(big.length)

  // Ended requests take their chunks with them.
  p.advance(10 * 60_000)
  await waitFor(async () => (await pending()) === 0, { what: 'expired follows swept', timeoutMs: 30_000 })
})
