// The store on PostgreSQL, end to end through dist/muster: enrollment, the
// node lifecycle, fleet tokens and workloads with `serve --database`, with no
// SQLite file made; and an SQLite store moved with `admin migrate-store`
// serving its nodes, credentials, tokens and projects unchanged.
import { describe, expect, test } from 'bun:test'
import { existsSync } from 'node:fs'
import { runMuster, startMuster, startServe, type Daemon } from '../helpers/binary.ts'
import { freePort } from '../helpers/node-side.ts'
import { freshDatabase } from '../helpers/postgres.ts'
import { tmpDir, waitFor } from '../helpers/tmp.ts'

interface NodeRow {
  name: string
  state: string
}

async function json<T>(args: string[], env: Record<string, string>): Promise<T> {
  const r = await runMuster([...args, '--json'], { env })
  if (r.code !== 0) throw new Error(`muster ${args.join(' ')} exited ${r.code}: ${r.stderr}`)
  return JSON.parse(r.stdout) as T
}

/** Joins `node` through the pinned listener and starts its Agent. */
async function joinWorker(dir: string, node: string, enrollUrl: string, fingerprint: string, token: string): Promise<Daemon> {
  const data = `${dir}/${node}`
  const joined = await runMuster(['worker', 'join', '--platform-url', enrollUrl, '--node-id', node, '--platform-fingerprint', fingerprint, '--address', '127.0.0.1', '--port', String(await freePort()), '--data-dir', data], { env: { MUSTER_ENROLLMENT_TOKEN: token } })
  expect(joined.code).toBe(0)
  return startMuster(['agent', '--data-dir', data], { env: { MUSTER_AGENT_HOST: '127.0.0.1', MUSTER_AGENT_HEARTBEAT_MS: '300' } })
}

const state = async (env: Record<string, string>, name: string) => (await json<{ nodes: NodeRow[] }>(['nodes', 'list'], env)).nodes.find((n) => n.name === name)?.state

describe('PostgreSQL through dist/muster', () => {
  test('serve --database: join, lifecycle, fleet tokens and a project, with no SQLite file', { timeout: 120_000 }, async () => {
    using dir = tmpDir()
    const db = await freshDatabase({ empty: true })
    const platformDir = `${dir.path}/platform`
    const marker = `muster-pg-${crypto.randomUUID().slice(0, 8)}`
    const agents: Daemon[] = []
    await using serve = await startServe(platformDir, ['--database', db.url, '--no-local-node', '--enrollment-port', '0', '--enrollment-address', '127.0.0.1'], { MUSTER_PROBE_INTERVAL_MS: '300' })
    try {
      const [, enrollUrl, fingerprint] = (await serve.waitForLog(/enrollment listener on (https:\/\/\S+) .*fingerprint (sha256:[0-9a-f]{64})/)) as unknown as [string, string, string]
      // host-side commands find the same store through the data directory
      const { token: apiToken } = await json<{ token: string }>(['admin', 'api-token', '--data-dir', platformDir], {})
      const env = { MUSTER_URL: serve.url, MUSTER_TOKEN: apiToken }
      // a single-use enrollment and a fleet token
      const { token: one } = await json<{ token: string }>(['nodes', 'enroll-token', 'w1'], env)
      agents.push(await joinWorker(dir.path, 'w1', enrollUrl, fingerprint, one))
      const fleet = await json<{ id: string; token: string }>(['nodes', 'join-token', 'create', '--max-uses', '2', '--name-pattern', 'w*'], env)
      agents.push(await joinWorker(dir.path, 'w2', enrollUrl, fingerprint, fleet.token))
      await waitFor(async () => (await state(env, 'w1')) === 'ready' && (await state(env, 'w2')) === 'ready', { timeoutMs: 30_000, what: 'both workers ready' })
      const tokens = await json<{ tokens: { id: string; uses: number }[] }>(['nodes', 'join-token', 'list'], env)
      expect(tokens.tokens.find((t) => t.id === fleet.id)?.uses).toBe(1)

      // a project runs on both
      expect((await runMuster(['projects', 'deploy', 'web', '--replicas', '2', '--', 'sh', '-c', `sleep 300; true ${marker}`], { env })).code).toBe(0)
      await waitFor(async () => (await json<{ placements: { state: string }[] }>(['projects', 'show', 'web'], env)).placements.filter((p) => p.state === 'running').length === 2, { timeoutMs: 30_000, what: 'two replicas running' })

      // lifecycle: rotate (the Agent renews and stays ready), drain, revoke, remove
      expect((await runMuster(['nodes', 'rotate', 'w1'], { env })).code).toBe(0)
      expect((await runMuster(['nodes', 'drain', 'w2'], { env })).code).toBe(0)
      await waitFor(async () => (await json<{ placements: { node: string | null; state: string }[] }>(['projects', 'show', 'web'], env)).placements.every((p) => p.node === 'w1' && p.state === 'running'), { timeoutMs: 30_000, what: 'replicas moved to w1' })
      expect(await state(env, 'w1')).toBe('ready')
      expect((await runMuster(['nodes', 'revoke', 'w2'], { env })).code).toBe(0)
      await waitFor(async () => (await state(env, 'w2')) === 'revoked', { what: 'w2 revoked' })
      expect((await runMuster(['nodes', 'remove', 'w2'], { env })).code).toBe(0)
      expect(await state(env, 'w2')).toBeUndefined()
      // a fresh enrollment of the removed name is refused without --replace (tombstone)
      expect((await runMuster(['nodes', 'enroll-token', 'w2'], { env })).code).toBe(1)
      const audit = await json<{ entries: { outcome: string; nodeId: string | null }[] }>(['nodes', 'audit'], env)
      expect(audit.entries.filter((e) => e.outcome === 'enrolled').map((e) => e.nodeId).sort()).toEqual(['w1', 'w2'])

      expect(existsSync(`${platformDir}/muster.db`)).toBe(false)
    } finally {
      for (const a of agents) await a.stop('SIGKILL')
      Bun.spawnSync(['pkill', '-f', marker])
      await serve.stop()
      await db.drop()
    }
  })

  test('admin migrate-store moves an SQLite store; nodes, credentials, tokens and projects carry on', { timeout: 120_000 }, async () => {
    using dir = tmpDir()
    const db = await freshDatabase({ empty: true })
    const platformDir = `${dir.path}/platform`
    const port = await freePort()
    const enrollPort = await freePort()
    const serveArgs = ['--enrollment-port', String(enrollPort), '--enrollment-address', '127.0.0.1']
    let agent: Daemon | undefined
    try {
      let serve = await startServe(platformDir, [...serveArgs, '--port', String(port)])
      const [, enrollUrl, fingerprint] = (await serve.waitForLog(/enrollment listener on (https:\/\/\S+) .*fingerprint (sha256:[0-9a-f]{64})/)) as unknown as [string, string, string]
      const { token: apiToken } = await json<{ token: string }>(['admin', 'api-token', '--data-dir', platformDir], {})
      const env = { MUSTER_URL: serve.url, MUSTER_TOKEN: apiToken }
      const { token } = await json<{ token: string }>(['nodes', 'enroll-token', 'w1'], env)
      agent = await joinWorker(dir.path, 'w1', enrollUrl, fingerprint, token)
      await waitFor(async () => (await state(env, 'w1')) === 'ready', { timeoutMs: 30_000, what: 'w1 ready' })
      const fleet = await json<{ id: string }>(['nodes', 'join-token', 'create', '--max-uses', '5'], env)
      expect((await runMuster(['projects', 'deploy', 'keep', '--replicas', '1', '--', 'sleep', '300'], { env })).code).toBe(0)
      const before = await json<{ nodes: { name: string; certificateSha256: string | null }[] }>(['nodes', 'list'], env)

      // refused while serve runs; refused into a database that is not empty
      const busy = await runMuster(['admin', 'migrate-store', '--data-dir', platformDir, '--to', db.url])
      expect(busy.code).toBe(1)
      expect(busy.stderr).toContain('is running')
      expect(await serve.stop()).toBe(0)
      const full = await freshDatabase()
      const notEmpty = await runMuster(['admin', 'migrate-store', '--data-dir', platformDir, '--to', full.url])
      expect(notEmpty.code).toBe(1)
      expect(notEmpty.stderr).toContain('not empty')
      await full.drop()

      // The target from the environment, where a URL with a password belongs
      const moved = await runMuster(['admin', 'migrate-store', '--data-dir', platformDir, '--json'], { env: { MUSTER_DATABASE_URL: db.url } })
      expect(moved.code).toBe(0)
      const result = JSON.parse(moved.stdout) as { tables: { table: string; rows: number }[] }
      expect(result.tables.find((t) => t.table === 'nodes')?.rows).toBe(1)
      expect(existsSync(`${platformDir}/muster.db`)).toBe(false)

      // the same data directory now serves from PostgreSQL; the running Agent's credential still works
      serve = await startServe(platformDir, [...serveArgs, '--port', String(port), '--database', db.url])
      try {
        const after = await json<{ nodes: { name: string; certificateSha256: string | null }[] }>(['nodes', 'list'], env)
        const ids = (l: typeof after) => l.nodes.filter((n) => n.name !== 'local').map((n) => [n.name, n.certificateSha256])
        expect(ids(after)).toEqual(ids(before))
        await waitFor(async () => (await state(env, 'w1')) === 'ready', { timeoutMs: 30_000, what: 'w1 ready on PostgreSQL' })
        const tokens = await json<{ tokens: { id: string }[] }>(['nodes', 'join-token', 'list'], env)
        expect(tokens.tokens.map((t) => t.id)).toContain(fleet.id)
        expect((await json<{ name: string }>(['projects', 'show', 'keep'], env)).name).toBe('keep')
        // the audit's ids continue after the copied ones
        expect((await runMuster(['nodes', 'rotate', 'w1'], { env })).code).toBe(0)
      } finally {
        await serve.stop()
      }
    } finally {
      await agent?.stop('SIGKILL')
      await db.drop()
    }
  })
})
