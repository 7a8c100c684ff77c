// Logs of a replica on the Platform's own node (`serve --local-node`): read in
// place, and followed, through the same route and shape as any node's.
import { expect, test } from 'bun:test'
import { startPlatform } from '../helpers/platform.ts'
import { waitFor } from '../helpers/tmp.ts'

test('the local node\'s replica log: the tail, then what it writes next', { timeout: 60_000 }, async () => {
  await using p = await startPlatform({ localNode: true })
  try {
    await p.client.projects.deploy({ name: 'counter', replicas: 1, cpu: 10, memory: 10, command: ['sh', '-c', 'i=0; while true; do i=$((i+1)); echo "n $i"; sleep 0.05; done'] })
    const tail = await waitFor(async () => {
      const r = await p.client.projects.logs('counter', { tail: 3 })
      return r.lines.filter((l) => l.startsWith('n ')).length === 3 ? r : null
    }, { what: 'three lines from the local replica' })
    expect(tail).toMatchObject({ project: 'counter', replica: 0, node: 'local', truncated: true })
    const last = Number(tail.lines.at(-1)!.slice(2))
    const stop = new AbortController()
    const seen: number[] = []
    for await (const batch of p.client.projects.followLogs('counter', { tail: 1, signal: stop.signal })) {
      seen.push(...batch.lines.filter((l) => l.startsWith('n ')).map((l) => Number(l.slice(2))))
      if (seen.some((n) => n > last + 20)) stop.abort()
    }
    expect(seen.at(-1)! - seen[0]! + 1).toBe(seen.length)
    // A replica that does not exist, and one the project does not have.
    await expect(p.client.projects.logs('counter', { replica: 5 })).rejects.toThrow('has no replica 5')
    await expect(p.client.projects.logs('nothing')).rejects.toThrow('No project named nothing')
  } finally {
    await p.client.projects.remove('counter')
  }
})
