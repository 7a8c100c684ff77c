// A replica's log passes through the store sealed, each chunk bound to its
// request and its place in it: a chunk copied by someone who can
// write the store onto another request, or to a later place in its own
// follow, does not open — an operator reading one project's log never sees
// another's, nor old lines again as new. The node's part is played over its
// real routes with its credential.
import { expect, test } from 'bun:test'
import { createClient } from '../../src/client/index.ts'
import type { MusterError } from '../../src/errors.ts'
import { VERSION } from '../../src/version.ts'
import { enrollRaw, newCert } from '../helpers/certs.ts'
import { startPlatform } from '../helpers/platform.ts'
import { waitFor } from '../helpers/tmp.ts'

test("a sealed log chunk copied to another project's request, or to a later place in its own follow, does not open", async () => {
  await using p = await startPlatform({ remoteDispatch: true, logWaitMs: 2000 })
  const { token } = await p.client.nodes.createEnrollment({ nodeId: 'w1' })
  const r = await enrollRaw(p.url, { token, nodeId: 'w1', certPem: (await newCert('w1')).certPem, version: VERSION })
  const { credential } = (await r.json()) as { credential: string }
  const node = createClient({ url: p.url, token: credential })
  await node.nodes.register({ version: VERSION, capacity: { cpuMillis: 4000, memoryMB: 4096 } })
  for (const name of ['secret', 'plain']) await p.client.projects.deploy({ name, replicas: 1, command: ['sleep', '300'], cpu: 10, memory: 10 })
  await waitFor(async () => (await Promise.all(['secret', 'plain'].map((n) => p.client.projects.show(n)))).every((x) => x.placements[0]?.node === 'w1'), { what: 'both placed on w1' })
  const requestFor = (project: string) =>
    waitFor(async () => (await node.projects.logRequests()).requests.find((d) => d.payload.project === project)?.payload.id, { what: `the log request for ${project}` })
  const chunkOf = async (id: string, seq: number) => (await p.platform.store.get<{ sealed: Uint8Array }>('SELECT sealed FROM log_chunks WHERE request = ?1 AND seq = ?2', id, seq))!.sealed
  const plant = (id: string, seq: number, sealed: Uint8Array) => p.platform.store.run('INSERT INTO log_chunks (request, seq, sealed, created_at) VALUES (?1, ?2, ?3, ?4)', id, seq, sealed, p.platform.now())

  // An operator follows 'secret'; the node sends its tail.
  const first = fetch(`${p.url}/api/v1/projects/secret/logs?follow=true&tail=10`, { headers: { authorization: `Bearer ${p.token}` } })
  const x = await requestFor('secret')
  await node.projects.sendLogs(x, { seq: 0, lines: ['SECRET-LINE'], truncated: false })
  const tail = (await (await first).json()) as { lines: string[]; cursor: string }
  expect(tail.lines).toEqual(['SECRET-LINE'])
  const sealed = await chunkOf(x, 0)

  // Copied to a later place in the same follow: the next batch holds what the node sent next, not the tail again.
  await plant(x, 1, sealed)
  await node.projects.sendLogs(x, { seq: 2, lines: ['NEXT-LINE'], truncated: false })
  const next = (await (await fetch(`${p.url}/api/v1/projects/secret/logs?cursor=${tail.cursor}`, { headers: { authorization: `Bearer ${p.token}` } })).json()) as { lines: string[] }
  expect(next.lines).toEqual(['NEXT-LINE'])

  // Copied to a request for another project: its reader gets nothing from it (the node never answers: unreachable).
  const plain = p.client.projects.logs('plain').then((l) => l.lines, (e: MusterError) => e.code)
  const y = await requestFor('plain')
  await plant(y, 0, sealed)
  expect(await plain).toBe('node-unreachable')
})
