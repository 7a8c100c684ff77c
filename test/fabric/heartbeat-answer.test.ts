// The dedicated heartbeat route writes its answer as text from parts, the tail
// cached per (assignment revision, Platforms list) (src/fabric/heartbeat.ts).
// The text must be what JSON.stringify makes of the framework route's answer
// object in every state, and the cached tail must follow the revision and the
// Platforms list the moment either moves.
import { describe, expect, test } from 'bun:test'
import { acceptHeartbeat, acceptHeartbeatText } from '../../src/fabric/heartbeat.ts'
import { VERSION } from '../../src/version.ts'
import { enrollRaw, newCert } from '../helpers/certs.ts'
import { startPlatform, type TestPlatform } from '../helpers/platform.ts'
import type { NodeFacingPlatform } from '../../src/wire/nodes.ts'

async function enrolled(p: TestPlatform, name: string): Promise<void> {
  const { token } = await p.client.nodes.createEnrollment({ nodeId: name })
  const r = await enrollRaw(p.url, { token, nodeId: name, certPem: (await newCert()).certPem, version: VERSION })
  expect(r.status).toBe(200)
}

describe('the heartbeat answer as text', () => {
  test('is JSON.stringify of the answer object in every state, and follows the revision and the Platforms list at once', async () => {
    await using p = await startPlatform({ remoteDispatch: true })
    const fabric = p.platform.fabric
    await enrolled(p, 'w1')
    const n = fabric.registry.get('w1')!
    const body = { version: VERSION, capacity: { cpuMillis: 1000, memoryMB: 512 }, replicas: [] }
    let revision: number | undefined = 0
    let platforms: NodeFacingPlatform[] = [{ id: 'a', url: 'https://a.example:7380' }]
    fabric.assignmentRevision = () => revision
    fabric.platforms = () => platforms
    const same = () => expect(acceptHeartbeatText(fabric, n, body)).toBe(JSON.stringify(acceptHeartbeat(fabric, n, body)))
    same()
    const before = acceptHeartbeatText(fabric, n, body)
    expect(before).toContain('"assignmentRevision":0')
    // the revision moves: the cached tail for the same list must not be served
    revision = 7
    same()
    expect(acceptHeartbeatText(fabric, n, body)).toContain('"assignmentRevision":7')
    revision = undefined
    same()
    expect(acceptHeartbeatText(fabric, n, body)).not.toContain('assignmentRevision')
    revision = 7
    // the Platforms list moves (a new list, as PlatformRegistry.nodeFacing hands out)
    platforms = [...platforms, { id: 'b', url: 'https://b.example:7380', enrollmentUrl: 'https://b.example:7443' }]
    same()
    expect(acceptHeartbeatText(fabric, n, body)).toContain('"id":"b"')
    platforms = []
    same()
    expect(acceptHeartbeatText(fabric, n, body)).not.toContain('platforms')
    // a rollout waits for the node (and not for another)
    fabric.updateWanted = (name) => name === 'w1'
    same()
    expect(acceptHeartbeatText(fabric, n, body)).toEndWith(',"update":true}')
    fabric.updateWanted = () => false
    same()
    expect(acceptHeartbeatText(fabric, n, body)).not.toContain('update')
    // other states: drained, a reason with characters JSON escapes, another generation
    await fabric.drain('w1')
    const m = fabric.registry.get('w1')!
    same()
    expect(acceptHeartbeatText(fabric, m, body)).toContain('"drained":true')
    m.url = 'https://127.0.0.1:1'
    m.probe = { ok: false, at: Date.now(), reason: 'refused "quoted" \\ and \u0001 control' }
    expect(JSON.parse(acceptHeartbeatText(fabric, m, body))).toMatchObject({ state: 'unreachable', reason: m.probe.reason })
    expect(acceptHeartbeatText(fabric, m, body)).toBe(JSON.stringify(acceptHeartbeat(fabric, m, body)))
    m.generation = 12
    expect(acceptHeartbeatText(fabric, m, body)).toBe(JSON.stringify(acceptHeartbeat(fabric, m, body)))
    // a replica's log is wanted: the answer says so
    fabric.logRequestsFor = (node) => node === 'w1'
    expect(acceptHeartbeatText(fabric, m, body)).toBe(JSON.stringify(acceptHeartbeat(fabric, m, body)))
    expect(acceptHeartbeatText(fabric, m, body)).toEndWith(',"logs":true}')
  })
})

describe('the fast credential check', () => {
  test('computes the mac kept on a node entry again when the entry\'s generation or certificate moves', async () => {
    const { currentNode } = await import('../../src/fabric/heartbeat.ts')
    await using p = await startPlatform({ remoteDispatch: true })
    const fabric = p.platform.fabric
    await enrolled(p, 'w1')
    const n = fabric.registry.get('w1')!
    const issue = (gen: number, cert = n.certSha256!) => `Bearer ${fabric.credentials.issue('w1', cert, gen)}`
    // the node's own entry: a view of its slot in the registry's table
    expect(currentNode(fabric, issue(1), undefined)?.slot).toBe(n.slot)
    // The entry changed in place (generation, then certificate): the old mac must not pass for the new values.
    n.generation = 2
    const stale = `Bearer mnc_w1.2.${issue(1).split('.').at(-1)}`
    expect(currentNode(fabric, stale, undefined)).toBeUndefined()
    expect(currentNode(fabric, issue(2), undefined)?.slot).toBe(n.slot)
    const oldCert = n.certSha256!
    n.certSha256 = 'f'.repeat(64)
    expect(currentNode(fabric, issue(2, oldCert), undefined)).toBeUndefined()
    expect(currentNode(fabric, issue(2), undefined)?.slot).toBe(n.slot)
  })
})
