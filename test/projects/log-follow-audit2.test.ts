// A followed log (the local node plays the node's part, as `serve --local-node`
// does), on what bugs planted by the second self-audit (test/mutants/audit2.ts)
// broke without a test failing: a follow's cursor serves only whoever started
// it, and a keep-alive (the next seq, no lines) is never kept, so the lines
// sent under that seq once the replica writes again are not lost.
import { describe, expect, test } from 'bun:test'
import { chmodSync, existsSync, writeFileSync } from 'node:fs'
import { startPlatform, type TestPlatform } from '../helpers/platform.ts'
import { tmpDir, waitFor } from '../helpers/tmp.ts'

interface Logs {
  lines: string[]
  cursor?: string | null
}

const logs = async (p: TestPlatform, token: string, query: string) => {
  const r = await fetch(`${p.url}/api/v1/projects/quiet/logs?${query}`, { headers: { authorization: `Bearer ${token}` } })
  return { status: r.status, body: (await r.json()) as Logs }
}

describe('a followed log (second self-audit)', () => {
  test('the cursor serves its operator only; lines written after quiet seconds arrive', { timeout: 90_000 }, async () => {
    await using p = await startPlatform({ localNode: true })
    using dir = tmpDir()
    // The local node runs the project as a uid of its own where it can switch users: it must reach, and remove, the trigger.
    chmodSync(dir.path, 0o777)
    const trigger = `${dir.path}/say`
    // A replica that writes one line at start, then one line each time the test asks for it.
    await p.client.projects.deploy({ name: 'quiet', replicas: 1, cpu: 10, memory: 10, command: ['sh', '-c', `echo ready; n=0; while true; do if [ -f ${trigger} ]; then n=$((n+1)); rm -f ${trigger}; echo "line $n"; fi; sleep 0.05; done`] })
    try {
      await waitFor(async () => (await p.client.projects.logs('quiet', { tail: 5 })).lines.includes('ready'), { what: 'the replica to start' })
      const follow = await logs(p, p.token, 'follow=true&tail=5')
      expect(follow.status).toBe(200)
      expect(follow.body.lines).toContain('ready')
      const cursor = follow.body.cursor!
      const id = cursor.split('.')[0]!

      // Another operator, even a superadmin, does not get this follow.
      const other = await p.platform.auth.mintApiToken({ name: 'other', role: 'superadmin' })
      const stolen = await logs(p, other.token, `cursor=${cursor}`)
      expect(stolen.status).toBe(404)

      // Quiet seconds: the node's side sends keep-alives (each stamps the request) and nothing else.
      const heard = async () => (await p.platform.store.get<{ picked_at: number | null }>('SELECT picked_at FROM log_requests WHERE id = ?1', id))?.picked_at ?? null
      const first = await waitFor(heard, { what: 'the first chunk to be stored' })
      const later = async (than: number) => {
        const at = (await heard()) ?? 0
        return at > than ? at : null
      }
      const second = await waitFor(() => later(first), { what: 'a keep-alive' })
      await waitFor(() => later(second), { what: 'another keep-alive' })

      // Then the replica writes: the line arrives through the same cursor.
      writeFileSync(trigger, '')
      await waitFor(() => !existsSync(trigger), { what: 'the replica to write' })
      const seen: string[] = []
      let at = cursor
      await waitFor(
        async () => {
          const r = await logs(p, p.token, `cursor=${at}`)
          expect(r.status).toBe(200)
          seen.push(...r.body.lines)
          if (r.body.cursor) at = r.body.cursor
          return seen.includes('line 1')
        },
        { what: 'line 1 through the follow', timeoutMs: 30_000 },
      )
      expect(seen.filter((l) => l.length > 0)).toEqual(['line 1'])
    } finally {
      await p.client.projects.remove('quiet')
    }
  })
})
