// Paged listings through the compiled binary: `nodes list` (--limit, --state,
// --label, --all, --json), `projects list` and `nodes audit` (--limit, --all).
import { expect, test } from 'bun:test'
import { runMuster } from '../helpers/binary.ts'
import { startPlatform } from '../helpers/platform.ts'
import { seedNodes } from '../helpers/seed-nodes.ts'

test('nodes list, projects list and nodes audit page through dist/muster', { timeout: 120_000 }, async () => {
  const names = Array.from({ length: 30 }, (_, i) => `w${String(i).padStart(2, '0')}`)
  const first = await startPlatform({ remoteDispatch: true, keepDir: true, nodeStaleAfterMs: 30 * 60_000 })
  await seedNodes(first.platform.store, names, (i) => (i % 3 === 0 ? 'revoked' : 'ready'), Date.now(), (i) => (i % 4 === 0 ? { role: 'build' } : null))
  await first.close()
  await using p = await startPlatform({ remoteDispatch: true, dataDir: first.dataDir, nodeStaleAfterMs: 30 * 60_000 })
  const env = { MUSTER_URL: p.url, MUSTER_TOKEN: p.token }
  const json = async (args: string[]) => {
    const r = await runMuster(args, { env })
    expect({ args, code: r.code, stderr: r.stderr }).toEqual({ args, code: 0, stderr: '' })
    return JSON.parse(r.stdout)
  }

  const page = await json(['nodes', 'list', '--limit', '10', '--json'])
  expect(page.nodes.map((n: { name: string }) => n.name)).toEqual(names.slice(0, 10))
  expect(page.nextCursor).toEqual(expect.any(String))
  expect(page.counts).toMatchObject({ total: 30, revoked: 10, ready: 20 })
  const all = await json(['nodes', 'list', '--limit', '7', '--all', '--json'])
  expect(all.nodes.map((n: { name: string }) => n.name)).toEqual(names)
  expect(all.nextCursor).toBeNull()
  const revoked = await json(['nodes', 'list', '--state', 'revoked', '--all', '--json'])
  expect(revoked.nodes.map((n: { name: string }) => n.name)).toEqual(names.filter((_, i) => i % 3 === 0))
  expect((await json(['nodes', 'list', '--label', 'role=build', '--all', '--json'])).nodes.map((n: { name: string }) => n.name)).toEqual(names.filter((_, i) => i % 4 === 0))
  expect((await json(['nodes', 'list', '--label', 'role=other', '--json'])).nodes).toEqual([])

  const table = await runMuster(['nodes', 'list', '--limit', '5'], { env })
  expect(table.code).toBe(0)
  expect(table.stdout).toContain('(5 shown of 30; --all lists every page)')

  for (const bad of [['--limit', '0'], ['--limit', '5001'], ['--state', 'sleepy'], ['--label', 'nokey'], ['--label', 'Role=build']]) {
    const r = await runMuster(['nodes', 'list', ...bad], { env })
    expect({ bad, code: r.code }).toEqual({ bad, code: 2 })
  }

  for (const name of ['c', 'a', 'b']) await p.client.projects.deploy({ name, command: ['true'], replicas: 0 })
  expect((await json(['projects', 'list', '--limit', '2', '--json'])).projects.map((x: { name: string }) => x.name)).toEqual(['a', 'b'])
  expect((await json(['projects', 'list', '--limit', '2', '--all', '--json'])).projects.map((x: { name: string }) => x.name)).toEqual(['a', 'b', 'c'])

  for (let i = 0; i < 3; i++) await fetch(`${p.url}/api/v1/nodes/enroll`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ token: 'mjt_x', nodeId: `bad${i}`, certPem: 'x' }) })
  const audit = await json(['nodes', 'audit', '--limit', '2', '--json'])
  expect(audit.entries).toHaveLength(2)
  expect(audit.nextCursor).toEqual(expect.any(String))
  expect((await json(['nodes', 'audit', '--limit', '2', '--all', '--json'])).entries.map((e: { nodeId: string }) => e.nodeId)).toEqual(['bad2', 'bad1', 'bad0'])
})
