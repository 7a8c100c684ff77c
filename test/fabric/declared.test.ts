// Operator-declared nodes (docs/nodes.md): serve --nodes-file reserves names,
// declared fields win, a bad file is refused with its line and reason, and a
// reload keeps the running set when the new file is bad.
import { describe, expect, test } from 'bun:test'
import { writeFileSync } from 'node:fs'
import { parseNodesFile } from '../../src/fabric/nodes-file.ts'
import { Platform } from '../../src/platform/platform.ts'
import { VERSION } from '../../src/version.ts'
import { enrollRaw, newCert } from '../helpers/certs.ts'
import { onEngine, startPlatform, type TestPlatform } from '../helpers/platform.ts'
import { ENGINES } from '../helpers/postgres.ts'
import { tmpDir, waitFor } from '../helpers/tmp.ts'

const lineOf = (text: string) => {
  try {
    parseNodesFile(text)
    return 'ok'
  } catch (e) {
    return (e as Error).message
  }
}

describe('nodes file', () => {
  test('a good file: names, labels, drained', () => {
    const nodes = parseNodesFile('{"nodes":[{"name":"b1","labels":{"role":"build"},"drained":true},{"name":"w2"}]}')
    expect([...nodes.values()]).toEqual([{ name: 'b1', labels: { role: 'build' }, drained: true }, { name: 'w2' }])
    expect(parseNodesFile('{"nodes":[]}').size).toBe(0)
  })

  test('every refusal names its line and reason', () => {
    expect(lineOf('{\n  "nodes": [\n    {"name": "w1"},\n    {"name": "local"}\n  ]\n}')).toBe("line 4: nodes[1].name: local is the Platform's own node and cannot be declared")
    expect(lineOf('{\n  "nodes": [\n    {"name": "w1"},\n    {"name": "w1"}\n  ]\n}')).toBe('line 4: nodes[1]: w1 is declared twice (first on line 3)')
    expect(lineOf('{\n  "nodes": [\n    {"name": "W 1"}\n  ]\n}')).toMatch(/^line 3: nodes\[0\]\.name: expected a name like worker-1/)
    expect(lineOf('{\n  "nodes": [\n    {"name": "w1",\n     "labels": {\n       "role": "build",\n       "Bad Key": "x"\n     }}\n  ]\n}')).toMatch(/^line 6: nodes\[0\]\.labels: label Bad Key: expected a label key/)
    expect(lineOf('{"nodes": [\n {"name": "w1", "drained": "yes"}]}')).toBe('line 2: nodes[0].drained must be true or false')
    expect(lineOf('{"nodes": [\n {"name": "w1",\n  "role": "build"}]}')).toBe('line 3: nodes[0]: unknown field "role" (name, labels, drained)')
    expect(lineOf('{"nodes": [\n {"labels": {}}]}')).toBe('line 2: nodes[0]: missing "name"')
    expect(lineOf('{\n  "nodes": [\n    {"name": "w1"}\n    {"name": "w2"}\n  ]\n}')).toBe('line 4: not valid JSON: expected , or ] between items')
    expect(lineOf('{\n  "nodes": [\n    {"name": "w1",}\n  ]\n}')).toBe('line 3: not valid JSON: expected a field name in double quotes')
    expect(lineOf('{"nodes": [{"name": "w1"}]')).toBe('line 1: not valid JSON: the document ends inside an object')
    expect(lineOf('\n\n{"nodes": 3}')).toBe('line 3: "nodes" must be a list')
    expect(lineOf('{"node": []}')).toBe('line 1: unknown field "node" (the file has only "nodes")')
    expect(lineOf('[]')).toMatch(/^line 1: expected an object/)
    expect(lineOf('')).toBe('line 1: not valid JSON: the document ends early')
    expect(lineOf('{"nodes": [{"name": "w1", "name": "w2"}]}')).toBe('line 1: field "name" appears twice')
  })
})

async function enroll(p: TestPlatform, token: string, nodeId: string, labels?: Record<string, string>) {
  return enrollRaw(p.url, { token, nodeId, certPem: (await newCert(nodeId)).certPem, version: VERSION, ...(labels ? { labels } : {}) })
}

describe.each(ENGINES)('on %s', (engine) => {
  onEngine(engine)

  describe('declared nodes', () => {
    test('a declared name enrolls only with its own enrollment, never a fleet token or the shared token; its declared fields win', async () => {
      using dir = tmpDir()
      writeFileSync(`${dir.path}/nodes.json`, JSON.stringify({ nodes: [{ name: 'b1', labels: { role: 'build' }, drained: true }, { name: 'w2' }] }))
      writeFileSync(`${dir.path}/fleet`, `${'s'.repeat(32)}\n`, { mode: 0o600 })
      await using p = await startPlatform({ remoteDispatch: true, nodesFile: `${dir.path}/nodes.json`, fleetTokenFile: `${dir.path}/fleet` })
      const fleet = await p.client.nodes.createJoinToken({ maxUses: 10 })
      // a fleet token: the same refusal as any bad token, the reason in the audit
      const byFleet = await enroll(p, fleet.token, 'b1')
      expect(byFleet.status).toBe(403)
      expect(await byFleet.json()).toEqual({ error: { code: 'enrollment-refused', message: 'Enrollment refused.' } })
      expect((await p.client.nodes.audit()).entries.find((e) => e.nodeId === 'b1')?.reason).toBe('declared name needs an enrollment for it')
      // the legacy shared token cannot register it either
      const legacy = await fetch(`${p.url}/api/v1/nodes/register`, { method: 'POST', headers: { authorization: `Bearer ${'s'.repeat(32)}`, 'content-type': 'application/json' }, body: JSON.stringify({ nodeId: 'w2', version: VERSION }) })
      expect(legacy.status).toBe(403)
      // an undeclared name still enrolls with the fleet token
      expect((await enroll(p, fleet.token, 'free', { zone: 'a' })).status).toBe(200)
      // its own enrollment works; what the node reports loses to the file
      const e = await p.client.nodes.createEnrollment({ nodeId: 'b1' })
      const ok = await enroll(p, e.token, 'b1', { role: 'general', zone: 'z' })
      expect(ok.status).toBe(200)
      const list = await p.client.nodes.list()
      expect(list.nodes.map((n) => [n.name, n.labels, n.drained, n.declared])).toEqual([
        ['b1', { role: 'build' }, true, true],
        ['free', { zone: 'a' }, false, false],
      ])
      // the listing's label filter selects by the labels it shows (the file's win over what b1 reported)
      expect((await p.client.nodes.list({ label: 'role=build' })).nodes.map((n) => n.name)).toEqual(['b1'])
      expect((await p.client.nodes.list({ label: 'role=general' })).counts.total).toBe(0)
      expect((await p.client.nodes.list({ label: 'zone=a' })).nodes.map((n) => n.name)).toEqual(['free'])
      // the heartbeat answer says drained too, and an operator cannot undo a declared drain
      const cred = ((await ok.json()) as { credential: string }).credential
      const hb = await fetch(`${p.url}/api/v1/nodes/register`, { method: 'POST', headers: { authorization: `Bearer ${cred}`, 'content-type': 'application/json' }, body: JSON.stringify({ version: VERSION, capacity: { cpuMillis: 4000, memoryMB: 4096 } }) })
      expect(((await hb.json()) as { drained: boolean }).drained).toBe(true)
      await expect(p.client.nodes.drain('b1', { drained: false })).rejects.toMatchObject({ code: 'conflict' })
      // a declared drained node gets no replica, even one that asks for its labels
      const compile = await p.client.projects.deploy({ name: 'compile', command: ['true'], replicas: 1, nodeLabels: { role: 'build' } })
      expect(compile.placements[0]!.node).toBeNull()
    })

    test('a bad file refuses the start with its line and reason', async () => {
      using dir = tmpDir()
      writeFileSync(`${dir.path}/nodes.json`, '{\n  "nodes": [\n    {"name": "local"}\n  ]\n}\n')
      await expect(startPlatform({ dataDir: `${dir.path}/data`, nodesFile: `${dir.path}/nodes.json` })).rejects.toThrow(`--nodes-file ${dir.path}/nodes.json line 3: nodes[0].name: local is the Platform's own node and cannot be declared`)
      await expect(Platform.open({ dataDir: `${dir.path}/data2`, nodesFile: `${dir.path}/missing.json` })).rejects.toThrow(/missing\.json line 0: cannot read it/)
    })

    test('reload: a good file applies at once (placement follows the new labels); a bad one keeps the running set', async () => {
      using dir = tmpDir()
      const file = `${dir.path}/nodes.json`
      writeFileSync(file, JSON.stringify({ nodes: [{ name: 'n1', labels: { role: 'build' } }] }))
      await using p = await startPlatform({ remoteDispatch: true, nodesFile: file })
      const e = await p.client.nodes.createEnrollment({ nodeId: 'n1' })
      const r = await enroll(p, e.token, 'n1')
      const cred = ((await r.json()) as { credential: string }).credential
      await fetch(`${p.url}/api/v1/nodes/register`, { method: 'POST', headers: { authorization: `Bearer ${cred}`, 'content-type': 'application/json' }, body: JSON.stringify({ version: VERSION, capacity: { cpuMillis: 4000, memoryMB: 4096 } }) })
      // n1 is a build node: a plain project does not go there
      expect((await p.client.projects.deploy({ name: 'web', command: ['true'], replicas: 1 })).placements[0]!.node).toBeNull()
      // a bad file: refused, logged, nothing changes
      writeFileSync(file, '{"nodes": [\n  {"name": "n1", "labels": {"role": ""}}\n]}')
      const bad = await p.platform.reloadNodesFile()
      expect(bad).toEqual({ ok: false, error: `${file} line 2: nodes[0].labels: label role: expected a label value like build (letters, digits, . _ -; at most 63)` })
      expect((await p.client.nodes.list()).nodes[0]!.labels).toEqual({ role: 'build' })
      // a good file: n1 is general now and web lands there
      writeFileSync(file, JSON.stringify({ nodes: [{ name: 'n1', labels: { role: 'general' } }, { name: 'n2' }] }))
      expect(await p.platform.reloadNodesFile()).toEqual({ ok: true, nodes: 2 })
      expect((await p.client.nodes.list()).nodes[0]!.labels).toEqual({ role: 'general' })
      await waitFor(async () => (await p.client.projects.show('web')).placements[0]!.node === 'n1', { what: 'web placed on n1 after the reload' })
      // n2 is reserved from now on
      const fleet = await p.client.nodes.createJoinToken({})
      expect((await enroll(p, fleet.token, 'n2')).status).toBe(403)
    })
  })
})
