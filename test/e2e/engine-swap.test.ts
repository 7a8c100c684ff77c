// Engine replacement on SIGHUP through the compiled binary (docs/nodes.md): while
// clients loop requests against both ports and a joined Agent heartbeats and
// long-polls, `kill -HUP <serve pid>` runs the binary now on disk; then a
// binary that exits at once and one that never starts change nothing; then
// the real binary again. Every request must succeed and the node stay ready.
import { describe, expect, test } from 'bun:test'
import { chmodSync, copyFileSync, existsSync, mkdirSync, renameSync, writeFileSync } from 'node:fs'
import { pinnedFetch } from '../../src/crypto/pin.ts'
import { DataDir } from '../../src/datadir.ts'
import { serveLockHolder } from '../../src/serve-lock.ts'
import { createClient } from '../../src/client/index.ts'
import { freshDatabase } from '../helpers/postgres.ts'
import { musterBin, runMuster, startMuster, type Daemon } from '../helpers/binary.ts'
import { freePort } from '../helpers/node-side.ts'
import { tmpDir, waitFor } from '../helpers/tmp.ts'

interface Traffic {
  /** Successful requests so far, by loop. */
  ok: Record<string, number>
  stop(): Promise<{ ok: Record<string, number>; failures: string[] }>
}

/** Loops requests against both ports until stopped; every error or non-2xx answer is a failure (and, given a node, one not ready). */
function startTraffic(o: { url: string; token: string; enrollUrl: string; fingerprint: string; node?: string }): Traffic {
  let stopped = false
  const ok: Record<string, number> = {}
  const failures: string[] = []
  const loop = (name: string, once: () => Promise<string | null>, pauseMs = 0) =>
    (async () => {
      while (!stopped) {
        try {
          const problem = await once()
          if (problem) failures.push(`${name}: ${problem}`)
          else ok[name] = (ok[name] ?? 0) + 1
        } catch (e) {
          failures.push(`${name}: ${(e as Error).message}`)
        }
        if (pauseMs) await Bun.sleep(pauseMs)
      }
    })()
  const status = async (r: Response) => (await r.arrayBuffer(), r.ok ? null : `status ${r.status}`)
  const loops = [
    // keep-alive clients: their connections to the old engine are moved over
    ...[1, 2, 3].map((i) => loop(`api keep-alive ${i}`, async () => status(await fetch(`${o.url}/healthz`)))),
    // a new connection per request: these exercise the accept queues
    ...[1, 2].map((i) => loop(`api new connection ${i}`, async () => status(await fetch(`${o.url}/healthz`, { headers: { connection: 'close' } })))),
    loop('api nodes', async () => {
      const r = await fetch(`${o.url}/api/v1/nodes`, { headers: { authorization: `Bearer ${o.token}` } })
      if (!r.ok) return status(r)
      if (!o.node) return null
      const n = ((await r.json()) as { nodes: { name: string; state: string; reason?: string }[] }).nodes.find((n) => n.name === o.node)
      return n?.state === 'ready' ? null : `${o.node} is ${n?.state} (${n?.reason})`
    }),
    // the enrollment listener (its trust route allows 50/s; stay well under)
    ...[1, 2].map((i) => loop(`enrollment ${i}`, async () => status(await pinnedFetch(`${o.enrollUrl}/api/v1/nodes/trust`, { method: 'POST' }, { fingerprint: o.fingerprint })), 80)),
  ]
  return {
    ok,
    async stop() {
      stopped = true
      await Promise.all(loops)
      return { ok, failures }
    },
  }
}

const count = (d: Daemon, re: RegExp) => d.log().match(new RegExp(re.source, 'g'))?.length ?? 0

/** Replaces the file at `path` the way an upgrade does: a new file renamed over it. */
function install(path: string, content: string | { copyOf: string }): void {
  const next = `${path}.next`
  if (typeof content === 'string') writeFileSync(next, content)
  else copyFileSync(content.copyOf, next)
  chmodSync(next, 0o755)
  renameSync(next, path)
}

describe('engine swap through dist/muster', () => {
  test('SIGHUP runs the binary on disk with no failed request on either port; the node stays ready; bad binaries change nothing', { timeout: 240_000 }, async () => {
    using dir = tmpDir()
    const real = await musterBin()
    const bin = `${dir.path}/bin/muster`
    mkdirSync(`${dir.path}/bin`)
    install(bin, { copyOf: real })
    const data = `${dir.path}/platform`
    const fleetToken = `${dir.path}/fleet-token`
    writeFileSync(fleetToken, 'a-fleet-token-of-some-length\n', { mode: 0o600 })
    // --nodes-file: a swap reads it again (a bad one is refused before the old engine stops anything).
    const nodesFile = `${dir.path}/nodes.json`
    const declare = (zone: string) => writeFileSync(nodesFile, JSON.stringify({ nodes: [{ name: 'w1', labels: { zone } }] }))
    declare('a')
    await using serve = await startMuster(['serve', '--data-dir', data, '--port', '0', '--enrollment-port', '0', '--enrollment-address', '127.0.0.1', '--no-local-node', '--fleet-token-file', fleetToken, '--nodes-file', nodesFile], {
      bin,
      env: { MUSTER_PROBE_INTERVAL_MS: '2000', MUSTER_SWAP_LINGER_SECONDS: '2' },
    })
    const url = (await serve.waitForLog(/listening on (http:\/\/\S+)/))[1]!
    const [, enrollUrl, fingerprint] = (await serve.waitForLog(/enrollment listener on (https:\/\/\S+) .*fingerprint (sha256:[0-9a-f]{64})/)) as unknown as [string, string, string]
    const { token } = JSON.parse((await runMuster(['admin', 'api-token', '--data-dir', data, '--json'])).stdout) as { token: string }
    const env = { MUSTER_URL: url, MUSTER_TOKEN: token }

    // A joined node whose Agent heartbeats and long-polls its assignments throughout.
    const { token: joinToken } = JSON.parse((await runMuster(['nodes', 'enroll-token', 'w1', '--json'], { env })).stdout) as { token: string }
    const work = `${dir.path}/worker`
    const joined = await runMuster(['worker', 'join', '--node-id', 'w1', '--platform-url', enrollUrl, '--platform-fingerprint', fingerprint, '--address', '127.0.0.1', '--port', String(await freePort()), '--data-dir', work], { stdin: `${joinToken}\n` })
    expect(joined.code).toBe(0)
    await using agent = await startMuster(['agent', '--data-dir', work], { env: { MUSTER_AGENT_HEARTBEAT_MS: '300', MUSTER_AGENT_HOST: '127.0.0.1' } })
    const w1 = async () => (JSON.parse((await runMuster(['nodes', 'list', '--json'], { env })).stdout) as { nodes: { name: string; state: string; labels: Record<string, string> }[] }).nodes.find((n) => n.name === 'w1')
    const ready = async () => (await w1())?.state === 'ready'
    await waitFor(ready, { timeoutMs: 30_000, what: 'w1 ready' })
    const deploy = async (name: string) => expect((await runMuster(['projects', 'deploy', name, '--replicas', '1', '--cpu', '10', '--memory', '8', '--', 'sleep', '300'], { env })).code).toBe(0)
    await deploy('before')
    await agent.waitForLog(/assignments revision \d+: 1 replica/, 20_000)

    const traffic = startTraffic({ url, token, enrollUrl, fingerprint, node: 'w1' })
    try {
      await waitFor(() => (traffic.ok['enrollment 1'] ?? 0) > 3 && (traffic.ok['api nodes'] ?? 0) > 3, { what: 'traffic on both ports' })
      // 1. the binary on disk is replaced (by a wrapper that leaves a mark and runs the real one): SIGHUP runs it
      const mark = `${dir.path}/new-binary-ran`
      install(bin, `#!/bin/sh\necho ran > '${mark}'\nexec '${real}' "$@"\n`)
      process.kill(serve.proc.pid, 'SIGHUP')
      await serve.waitForLog(/engine swap complete/, 60_000)
      expect(existsSync(mark)).toBe(true)
      const swapped = serve.log().match(/engine swap: engine (\d+) \(muster \S+\) serves; .* engine (\d+) drains/)!
      const [engine, oldEngine] = [Number(swapped[1]), Number(swapped[2])]
      expect(() => process.kill(oldEngine, 0)).toThrow()
      // The Agent's assignment long poll reached the new engine: a project deployed now arrives.
      await deploy('after')
      await agent.waitForLog(/assignments revision \d+: 2 replica/, 20_000)

      // A SIGHUP sent to the engine itself is not a stop.
      process.kill(engine, 'SIGHUP')
      await serve.waitForLog(/SIGHUP is for the muster serve process/)
      expect(() => process.kill(engine, 0)).not.toThrow()

      // A file serve reads turned bad: the new engine refuses it before the old one stops anything.
      chmodSync(fleetToken, 0o644)
      process.kill(serve.proc.pid, 'SIGHUP')
      await serve.waitForLog(new RegExp(`engine swap failed: .* did not start: it exited with code 1; engine ${engine} keeps serving`), 30_000)
      expect(serve.log()).toContain(`${fleetToken} is accessible by group or others`)
      chmodSync(fleetToken, 0o600)
      // So is a bad nodes file, with its line and reason; the nodes it declared stay in force.
      writeFileSync(nodesFile, '{"nodes": [\n  {"name": "w1"},\n  {"name": "w1"}\n]}\n')
      process.kill(serve.proc.pid, 'SIGHUP')
      await waitFor(() => count(serve, new RegExp(`did not start: it exited with code 1; engine ${engine} keeps serving`)) === 2, { timeoutMs: 30_000, what: 'the bad nodes file refused' })
      expect(serve.log()).toMatch(/--nodes-file \S+ line 3: .*w1 is declared twice/)
      // the engine that keeps serving reads it again itself, and says it keeps what it had
      await serve.waitForLog(/nodes file not reloaded, keeping the 1 declared node\(s\) in force: \S+ line 3/)
      expect((await w1())?.labels).toEqual({ zone: 'a' })
      declare('b') // a good one: a SIGHUP applies it even when the new binary does not start (below)

      // 2. a binary that exits at once: the engine keeps serving, and the log says why
      install(bin, '#!/bin/sh\necho "this build is broken" >&2\nexit 3\n')
      process.kill(serve.proc.pid, 'SIGHUP')
      await serve.waitForLog(new RegExp(`engine swap failed: .* did not start: it exited with code 3; engine ${engine} keeps serving`), 30_000)
      await waitFor(async () => (await w1())?.labels.zone === 'b', { what: 'the nodes file read again by the engine that kept serving' })
      declare('c') // and the next swap's engine reads it at its start
      // 3. a binary that never starts: killed after 10 s, the engine keeps serving
      install(bin, '#!/bin/sh\nexec sleep 120\n')
      process.kill(serve.proc.pid, 'SIGHUP')
      await serve.waitForLog(new RegExp(`engine swap failed: .* did not start: no answer within 10 s; engine ${engine} keeps serving`), 40_000)
      expect(() => process.kill(engine, 0)).not.toThrow()

      // 4. the real binary again
      install(bin, { copyOf: real })
      process.kill(serve.proc.pid, 'SIGHUP')
      await waitFor(() => count(serve, /engine swap complete/) === 2, { timeoutMs: 60_000, what: 'the second swap' })
      expect(() => process.kill(engine, 0)).toThrow()
      expect((await w1())?.labels).toEqual({ zone: 'c' })

      // 5. a binary that starts but cannot open the Platform (after the old engine quiesced): the old
      // engine's own binary image takes over instead, and still nothing fails
      install(bin, `#!/bin/sh\nMUSTER_FEDERATION_HEARTBEAT_SECONDS=nonsense exec '${real}' "$@"\n`)
      process.kill(serve.proc.pid, 'SIGHUP')
      await waitFor(() => count(serve, /engine swap complete/) === 3, { timeoutMs: 60_000, what: 'the fallback swap' })
      expect(serve.log()).toMatch(/engine swap: engine \d+ could not take over: MUSTER_FEDERATION_HEARTBEAT_SECONDS must be/)
      expect(serve.log()).toMatch(/starting the old engine's binary again \(\/proc\/\d+\/exe\)/)
    } finally {
      const { ok, failures } = await traffic.stop()
      expect(failures).toEqual([])
      for (const name of ['api keep-alive 1', 'api new connection 1', 'api nodes', 'enrollment 1']) expect(ok[name] ?? 0).toBeGreaterThan(20)
    }
    expect(await ready()).toBe(true)
    expect(agent.log()).not.toContain('heartbeat failed')
    expect(agent.log()).not.toContain('cannot fetch assignments')

    // serve.lock stays with the serve process; a second serve is refused; a stop releases it.
    expect(serveLockHolder(new DataDir(data))).toBe(serve.proc.pid)
    const second = await runMuster(['serve', '--data-dir', data, '--port', '0'])
    expect(second.code).toBe(1)
    expect(second.stderr).toContain(`pid ${serve.proc.pid}`)
    // An engine started by hand (not by the serve holding the lock) is refused too.
    const rogue = await runMuster(['serve', '--data-dir', data, '--port', '0'], { env: { MUSTER_SERVE_ENGINE: 'first' } })
    expect(rogue.code).toBe(1)
    expect(rogue.stderr).toContain('was not started by the muster serve holding the data directory')
    expect(await serve.stop('SIGTERM')).toBe(0)
    expect(serveLockHolder(new DataDir(data))).toBeNull()
  })

  test('on PostgreSQL: the new engine opens the shared store only after the old one closed it; no request fails, no write is lost', { timeout: 180_000 }, async () => {
    using dir = tmpDir()
    const pg = await freshDatabase()
    try {
      const data = `${dir.path}/platform`
      await using serve = await startMuster(['serve', '--data-dir', data, '--port', '0', '--enrollment-port', '0', '--enrollment-address', '127.0.0.1', '--database', pg.url], {
        env: { MUSTER_SWAP_LINGER_SECONDS: '2', MUSTER_LOG_LEVEL: '4' },
      })
      const url = (await serve.waitForLog(/listening on (http:\/\/\S+)/))[1]!
      const [, enrollUrl, fingerprint] = (await serve.waitForLog(/enrollment listener on (https:\/\/\S+) .*fingerprint (sha256:[0-9a-f]{64})/)) as unknown as [string, string, string]
      const { token } = JSON.parse((await runMuster(['admin', 'api-token', '--data-dir', data, '--json'])).stdout) as { token: string }
      const client = createClient({ url, token })
      const traffic = startTraffic({ url, token, enrollUrl, fingerprint })
      // Writes all through the swap: every deploy answered 2xx must be in the store afterwards.
      let stopped = false
      const deployed: string[] = []
      const failures: string[] = []
      const writes = (async () => {
        for (let i = 0; !stopped; i++) {
          const name = `p${i}`
          try {
            await client.projects.deploy({ name, command: ['sleep', '300'], replicas: 0 })
            deployed.push(name)
          } catch (e) {
            failures.push(`deploy ${name}: ${(e as Error).message}`)
          }
        }
      })()
      try {
        await waitFor(() => deployed.length > 5 && (traffic.ok['enrollment 1'] ?? 0) > 3, { what: 'traffic and writes' })
        process.kill(serve.proc.pid, 'SIGHUP')
        await serve.waitForLog(/engine swap complete/, 60_000)
        const before = deployed.length
        await waitFor(() => deployed.length > before + 5, { what: 'writes at the new engine' })
      } finally {
        stopped = true
        await writes
        const t = await traffic.stop()
        expect(t.failures).toEqual([])
        expect(failures).toEqual([])
      }
      const stored = new Set((await client.projects.list()).projects.map((p) => p.name))
      expect(deployed.filter((n) => !stored.has(n))).toEqual([])
      // One engine on the store at a time: the old one had quiesced (services stopped, store closed) before the new one opened it and listened.
      const log = serve.log()
      const quiesced = log.search(/engine swap: engine \d+ quiesced/)
      const listening = [...log.matchAll(/muster Platform listening on/g)].map((m) => m.index!)
      expect(quiesced).toBeGreaterThan(0)
      expect(listening.length).toBe(2)
      expect(listening[1]!).toBeGreaterThan(quiesced)
      expect(await serve.stop('SIGTERM')).toBe(0)
    } finally {
      await pg.drop()
    }
  })
})
