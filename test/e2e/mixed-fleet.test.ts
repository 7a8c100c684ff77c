// A mixed fleet through dist/muster (docs/nodes.md): 200 legacy nodes
// on the shared fleet token and 200 enrolled nodes heartbeat under
// --node-auth both and are each registered exactly once; restarted with
// --node-auth enrolled, the Platform refuses the legacy ones. A simulator
// sends what the Agent sends (POST /api/v1/nodes/register with version,
// capacity and replicas), not 400 Agent processes.
import { describe, expect, test } from 'bun:test'
import { writeFileSync } from 'node:fs'
import { VERSION } from '../../src/version.ts'
import { runMuster, startServe } from '../helpers/binary.ts'
import { enrollRaw, newCert } from '../helpers/certs.ts'
import { ENGINES, freshDatabase } from '../helpers/postgres.ts'
import { tmpDir } from '../helpers/tmp.ts'

const N = 200
const FLEET = 'fleet-shared-token-0123456789abcdef'

interface SimNode {
  name: string
  bearer: string
  legacy: boolean
}

/** One heartbeat as the Agent sends it (a legacy Agent names itself in the body). */
function heartbeat(url: string, n: SimNode): Promise<number> {
  const body = { ...(n.legacy ? { nodeId: n.name } : {}), version: VERSION, capacity: { cpuMillis: 2000, memoryMB: 2048 }, replicas: [] }
  return fetch(`${url}/api/v1/nodes/register`, { method: 'POST', headers: { authorization: `Bearer ${n.bearer}`, 'content-type': 'application/json' }, body: JSON.stringify(body) }).then(async (r) => {
    await r.arrayBuffer()
    return r.status
  })
}

describe.each(ENGINES)('mixed fleet on %s', (engine) => {
  test(`${N} legacy and ${N} enrolled nodes are each registered once; --node-auth enrolled then refuses the legacy ones`, { timeout: 240_000 }, async () => {
    using dir = tmpDir()
    const data = `${dir.path}/platform`
    writeFileSync(`${dir.path}/fleet`, `${FLEET}\n`, { mode: 0o600 })
    const db = engine === 'postgres' ? await freshDatabase({ empty: true }) : undefined
    const store = db ? ['--database', db.url] : []
    const serveArgs = (auth: string) => ['--remote-dispatch', '--node-auth', auth, '--fleet-token-file', `${dir.path}/fleet`, ...store]
    try {
      let serve = await startServe(data, serveArgs('both'))
      let nodes: SimNode[]
      try {
        const { token } = JSON.parse((await runMuster(['admin', 'api-token', '--data-dir', data, '--json'])).stdout) as { token: string }
        const env = { MUSTER_URL: serve.url, MUSTER_TOKEN: token }
        const fleet = JSON.parse((await runMuster(['nodes', 'join-token', 'create', '--max-uses', String(N), '--name-pattern', 'new-*', '--json'], { env })).stdout) as { token: string }
        // 1. enroll the new ones, 20 at a time
        const enrolled: SimNode[] = []
        for (let i = 0; i < N; i += 20) {
          const batch = await Promise.all(
            Array.from({ length: 20 }, async (_, j) => {
              const name = `new-${i + j}`
              const r = await enrollRaw(serve.url, { token: fleet.token, nodeId: name, certPem: (await newCert(name)).certPem, version: VERSION })
              expect(r.status).toBe(200)
              return { name, bearer: ((await r.json()) as { credential: string }).credential, legacy: false }
            }),
          )
          enrolled.push(...batch)
        }
        const legacy: SimNode[] = Array.from({ length: N }, (_, i) => ({ name: `old-${i}`, bearer: FLEET, legacy: true }))
        nodes = [...legacy, ...enrolled]
        // 2. three rounds of heartbeats from all 400 at once; each legacy node's first heartbeat is sent twice at once (a retry racing the original)
        const first = await Promise.all([...nodes, ...legacy].map((n) => heartbeat(serve.url, n)))
        expect(first.filter((s) => s !== 200)).toEqual([])
        for (let round = 0; round < 2; round++) {
          const statuses = await Promise.all(nodes.map((n) => heartbeat(serve.url, n)))
          expect(statuses.filter((s) => s !== 200)).toEqual([])
        }
        // 3. each registered exactly once
        const list = JSON.parse((await runMuster(['nodes', 'list', '--json'], { env })).stdout) as { nodes: { name: string; auth: string; state: string }[] }
        expect(list.nodes).toHaveLength(2 * N)
        expect(new Set(list.nodes.map((n) => n.name)).size).toBe(2 * N)
        expect(list.nodes.filter((n) => n.auth === 'legacy').map((n) => n.name).sort()).toEqual(legacy.map((n) => n.name).sort())
        expect(list.nodes.filter((n) => n.auth === 'enrolled').map((n) => n.name).sort()).toEqual(enrolled.map((n) => n.name).sort())
        expect(list.nodes.every((n) => n.state === 'ready')).toBe(true)
        const registered = [...serve.log().matchAll(/legacy node (old-\d+) registered with the shared fleet token/g)].map((m) => m[1])
        expect(registered).toHaveLength(N)
        expect(new Set(registered).size).toBe(N)
      } finally {
        await serve.stop()
      }

      // 4. the same store, enrolled credentials only
      serve = await startServe(data, serveArgs('enrolled'))
      try {
        const statuses = await Promise.all(nodes.map(async (n) => [n.legacy, await heartbeat(serve.url, n)] as const))
        expect(statuses.filter(([legacy, s]) => legacy && s !== 403)).toEqual([])
        expect(statuses.filter(([legacy, s]) => !legacy && s !== 200)).toEqual([])
        const refused = await fetch(`${serve.url}/api/v1/nodes/register`, { method: 'POST', headers: { authorization: `Bearer ${FLEET}`, 'content-type': 'application/json' }, body: JSON.stringify({ nodeId: 'old-0' }) })
        expect(((await refused.json()) as { error: { message: string } }).error.message).toContain('--node-auth enrolled')
      } finally {
        await serve.stop()
      }
    } finally {
      await db?.drop()
    }
  })
})
