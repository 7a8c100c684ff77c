// The log relay with two Platforms on one PostgreSQL: a
// node talks to one of them, and either relays its replica's log; a follow
// started on one goes on through the other (the chunks are in the store).
import { describe, expect, test } from 'bun:test'
import { copyFileSync, mkdirSync, readFileSync } from 'node:fs'
import { runMuster, startMuster, startServe, type Daemon } from '../helpers/binary.ts'
import { freePort } from '../helpers/node-side.ts'
import { freshDatabase } from '../helpers/postgres.ts'
import { tmpDir, waitFor } from '../helpers/tmp.ts'

type Serve = Daemon & { url: string; enrollUrl: string; fingerprint: string }

async function serveOn(dir: string, database: string): Promise<Serve> {
  const d = await startServe(dir, ['--database', database, '--no-local-node', '--enrollment-port', '0', '--enrollment-address', '127.0.0.1'], { MUSTER_PROBE_INTERVAL_MS: '300' })
  const [, enrollUrl, fingerprint] = (await d.waitForLog(/enrollment listener on (https:\/\/\S+) .*fingerprint (sha256:[0-9a-f]{64})/)) as unknown as [string, string, string]
  return Object.assign(d, { enrollUrl, fingerprint })
}

const numbers = (lines: string[]) => lines.map((l) => Number(l.match(/^tick (\d+)$/)?.[1])).filter((n) => n > 0)

describe('logs with two Platforms', () => {
  test('either Platform relays the log of a node attached to one of them; a follow moves between them', { timeout: 240_000 }, async () => {
    using dir = tmpDir()
    const db = await freshDatabase({ empty: true })
    await using a = await serveOn(`${dir.path}/a`, db.url)
    mkdirSync(`${dir.path}/b/platform`, { recursive: true, mode: 0o700 })
    copyFileSync(`${dir.path}/a/platform/master.key`, `${dir.path}/b/platform/master.key`)
    await using b = await serveOn(`${dir.path}/b`, db.url)
    const { token } = JSON.parse((await runMuster(['admin', 'api-token', '--data-dir', `${dir.path}/a`, '--json'])).stdout) as { token: string }
    const env = (s: Serve) => ({ MUSTER_URL: s.url, MUSTER_TOKEN: token })
    const enroll = JSON.parse((await runMuster(['nodes', 'enroll-token', 'w1', '--json'], { env: env(a) })).stdout) as { token: string }
    const data = `${dir.path}/w1`
    const joined = await runMuster(['worker', 'join', '--platform-url', a.enrollUrl, '--node-id', 'w1', '--platform-fingerprint', a.fingerprint, '--heartbeat-only', '--port', String(await freePort()), '--data-dir', data], { env: { MUSTER_ENROLLMENT_TOKEN: enroll.token } })
    expect(joined.code).toBe(0)
    await using _agent = await startMuster(['agent', '--data-dir', data], { env: { MUSTER_AGENT_HOST: '127.0.0.1', MUSTER_AGENT_HEARTBEAT_MS: '300' } })
    await waitFor(async () => (JSON.parse((await runMuster(['nodes', 'list', '--json'], { env: env(b) })).stdout) as { nodes: { state: string }[] }).nodes[0]?.state === 'ready', { timeoutMs: 45_000, what: 'w1 ready' })
    // the Agent knows both Platforms and uses one of them
    await waitFor(() => (JSON.parse(readFileSync(`${data}/worker/platforms.json`, 'utf8')) as { platforms: unknown[] }).platforms.length === 2, { what: 'both Platforms known to w1' })
    expect((await runMuster(['projects', 'deploy', 'ticker', '--replicas', '1', '--', 'sh', '-c', 'i=0; while true; do i=$((i+1)); echo "tick $i"; sleep 0.1; done'], { env: env(a) })).code).toBe(0)
    await waitFor(() => readFileSync(`${data}/worker/logs/ticker-0.log`, 'utf8').includes('tick 5'), { timeoutMs: 45_000, what: 'ticker writing on w1' })

    // Asked on either Platform, the same node answers.
    for (const s of [a, b]) {
      const r = await runMuster(['projects', 'logs', 'ticker', '--tail', '3', '--json'], { env: env(s), timeoutMs: 60_000 })
      expect(r.code).toBe(0)
      const logs = JSON.parse(r.stdout) as { node: string; lines: string[] }
      expect(logs.node).toBe('w1')
      expect(numbers(logs.lines)).toHaveLength(3)
    }

    // A follow started on a, polled on b.
    const first = (await (await fetch(`${a.url}/api/v1/projects/ticker/logs?tail=1&follow=true`, { headers: { authorization: `Bearer ${token}` } })).json()) as { lines: string[]; cursor: string }
    expect(first.cursor).toMatch(/^[a-z2-7]{24}\.0$/)
    let cursor = first.cursor
    const got: number[] = [...numbers(first.lines)]
    while (got.length < 15) {
      const r = await fetch(`${b.url}/api/v1/projects/ticker/logs?cursor=${cursor}`, { headers: { authorization: `Bearer ${token}` } })
      expect(r.status).toBe(200)
      const next = (await r.json()) as { lines: string[]; cursor: string | null }
      expect(next.cursor).not.toBeNull()
      got.push(...numbers(next.lines))
      cursor = next.cursor!
    }
    // consecutive: nothing lost or repeated crossing Platforms
    expect(got.at(-1)! - got[0]! + 1).toBe(got.length)
  })
})
