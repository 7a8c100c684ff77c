// Several Platforms as one, through dist/muster (docs/storage-ha.md): two `muster
// serve` processes on one PostgreSQL, separate data directories holding the
// same platform/master.key. Enrollment races across both listeners, joins
// through each, a project deployed on one runs on nodes attached to the
// other, a revoke on one is refused by the other within a second, and kill -9
// of each Platform in turn leaves the fleet ready, placing and enrolling.
import { describe, expect, test } from 'bun:test'
import { copyFileSync, existsSync, mkdirSync, readFileSync } from 'node:fs'
import { pinnedFetch } from '../../src/crypto/pin.ts'
import { VERSION } from '../../src/version.ts'
import { killServeHard, runMuster, startMuster, startServe, type Daemon } from '../helpers/binary.ts'
import { newCert, withProof } from '../helpers/certs.ts'
import { freePort } from '../helpers/node-side.ts'
import { freshDatabase } from '../helpers/postgres.ts'
import { tmpDir, waitFor } from '../helpers/tmp.ts'

type Serve = Daemon & { url: string; enrollUrl: string; fingerprint: string; dir: string }
type Env = Record<string, string>

async function json<T>(args: string[], env: Env): Promise<T> {
  const r = await runMuster([...args, '--json'], { env })
  if (r.code !== 0) throw new Error(`muster ${args.join(' ')} exited ${r.code}: ${r.stderr}`)
  return JSON.parse(r.stdout) as T
}

/** `muster serve` on the shared store, with its listener on 127.0.0.1 (a fixed API port when restarting). */
async function serveOn(dir: string, database: string, port = 0): Promise<Serve> {
  const d = await startServe(dir, ['--database', database, '--no-local-node', '--enrollment-port', '0', '--enrollment-address', '127.0.0.1', '--port', String(port)], { MUSTER_PROBE_INTERVAL_MS: '300' })
  const [, enrollUrl, fingerprint] = (await d.waitForLog(/enrollment listener on (https:\/\/\S+) .*fingerprint (sha256:[0-9a-f]{64})/)) as unknown as [string, string, string]
  return Object.assign(d, { enrollUrl, fingerprint, dir })
}

/** The operator copies platform/master.key into the second Platform's data directory. */
function copyMasterKey(from: string, to: string): void {
  mkdirSync(`${to}/platform`, { recursive: true, mode: 0o700 })
  copyFileSync(`${from}/platform/master.key`, `${to}/platform/master.key`)
}

const nodesOn = async (env: Env) => (await json<{ nodes: { name: string; state: string }[] }>(['nodes', 'list'], env)).nodes
const readyOn = async (env: Env, names: string[]) => {
  const nodes = await nodesOn(env)
  return names.every((n) => nodes.find((x) => x.name === n)?.state === 'ready')
}
const running = async (env: Env, project: string) => (await json<{ placements: { node: string | null; state: string }[] }>(['projects', 'show', project], env)).placements.filter((p) => p.state === 'running')

describe('two Platforms through dist/muster', () => {
  test('one PostgreSQL, two serves: races, joins, cross-Platform workloads, revoke within 1 s, kill -9 of each in turn', { timeout: 480_000 }, async () => {
    using dir = tmpDir()
    const db = await freshDatabase({ empty: true })
    const marker = `muster-ha-${crypto.randomUUID().slice(0, 8)}`
    const agents: Daemon[] = []
    const serves: Serve[] = []
    try {
      // 1. two Platforms on one store; the second holds a copy of the first's master key
      let a = await serveOn(`${dir.path}/a`, db.url)
      serves.push(a)
      copyMasterKey(a.dir, `${dir.path}/b`)
      let b = await serveOn(`${dir.path}/b`, db.url)
      serves.push(b)
      // a third with its own master key is refused, naming the file to copy
      const stranger = await runMuster(['serve', '--data-dir', `${dir.path}/c`, '--database', db.url, '--port', '0', '--no-local-node'])
      expect(stranger.code).toBe(1)
      expect(stranger.stderr).toContain('Copy platform/master.key')
      const { token: apiToken } = await json<{ token: string }>(['admin', 'api-token', '--data-dir', a.dir], {})
      const envOf = (s: Serve): Env => ({ MUSTER_URL: s.url, MUSTER_TOKEN: apiToken })
      const info = await json<{ platforms: { url: string }[] }>(['nodes', 'platform'], envOf(b))
      expect(info.platforms.map((p) => p.url).sort()).toEqual([a.url, b.url].sort())

      // 2. 150 enrolls on a 100-use token, split across both listeners: exactly 100 credentials
      const race = await json<{ id: string; token: string }>(['nodes', 'join-token', 'create', '--max-uses', '100', '--name-pattern', 'race-*'], envOf(a))
      const certs = await Promise.all(Array.from({ length: 150 }, (_, i) => newCert(`race-${i}`)))
      // each listener's certificate learned once, so the race is of enrolls, not of pin probes
      for (const s of [a, b]) expect((await pinnedFetch(`${s.enrollUrl}/api/v1/nodes/trust`, { method: 'POST' }, { fingerprint: s.fingerprint })).status).toBe(200)
      const statuses = await Promise.all(
        certs.map(async (c, i) => {
          const s = i % 2 ? b : a
          const body = JSON.stringify(withProof({ token: race.token, nodeId: `race-${i}`, certPem: c.certPem, version: VERSION }, c.keyPem))
          // A connection the loaded listener dropped is sent again: a repeated enroll is answered the same and costs no use.
          for (let attempt = 1; ; attempt++) {
            try {
              return (await pinnedFetch(`${s.enrollUrl}/api/v1/nodes/enroll`, { method: 'POST', headers: { 'content-type': 'application/json' }, body }, { fingerprint: s.fingerprint })).status
            } catch (e) {
              if (attempt >= 3) throw e
            }
          }
        }),
      )
      expect(statuses.filter((s) => s === 200)).toHaveLength(100)
      expect(statuses.filter((s) => s === 403)).toHaveLength(50)
      expect((await json<{ tokens: { id: string; uses: number }[] }>(['nodes', 'join-token', 'list'], envOf(b))).tokens.find((t) => t.id === race.id)?.uses).toBe(100)

      // 3. one join through each Platform's listener (each pinned to that listener's certificate)
      const fleet = await json<{ token: string }>(['nodes', 'join-token', 'create', '--max-uses', '10', '--name-pattern', 'w-*'], envOf(b))
      const join = async (name: string, via: Serve) => {
        const data = `${dir.path}/${name}`
        const r = await runMuster(['worker', 'join', '--platform-url', via.enrollUrl, '--node-id', name, '--platform-fingerprint', via.fingerprint, '--address', '127.0.0.1', '--port', String(await freePort()), '--data-dir', data], { env: { MUSTER_ENROLLMENT_TOKEN: fleet.token } })
        expect(r.code).toBe(0)
        const agent = await startMuster(['agent', '--data-dir', data], { env: { MUSTER_AGENT_HOST: '127.0.0.1', MUSTER_AGENT_HEARTBEAT_MS: '300' } })
        agents.push(agent)
        return data
      }
      const wa = await join('w-a', a)
      const wb = await join('w-b', b)
      await waitFor(async () => (await readyOn(envOf(a), ['w-a', 'w-b'])) && (await readyOn(envOf(b), ['w-a', 'w-b'])), { timeoutMs: 30_000, what: 'both workers ready on both Platforms' })
      // doctor on a worker names the Platform its Agent uses, among both
      const doctor = JSON.parse((await runMuster(['doctor', '--data-dir', wa, '--json'])).stdout) as { checks: { name: string; message: string }[] }
      const inUse = doctor.checks.find((c) => c.name === 'platform-in-use')?.message ?? ''
      expect(inUse).toContain('2 Platforms known')
      const usedBy = (data: string) => (JSON.parse(readFileSync(`${data}/worker/platforms.json`, 'utf8')) as { current: string }).current
      expect(inUse).toContain(usedBy(wa))

      // 4. a project deployed on one Platform runs on a node attached to the other
      const attached = new Set([usedBy(wa), usedBy(wb)])
      const deployOn = attached.has(b.url) ? a : b
      expect((await runMuster(['projects', 'deploy', 'web', '--replicas', '2', '--', 'sh', '-c', `sleep 600; true ${marker}`], { env: envOf(deployOn) })).code).toBe(0)
      await waitFor(async () => (await running(envOf(a), 'web')).length === 2 && (await running(envOf(b), 'web')).length === 2, { timeoutMs: 30_000, what: 'web runs on both nodes, as both Platforms see it' })

      // 5. a revoke on one Platform is refused by the other within a second
      const single = await json<{ token: string }>(['nodes', 'enroll-token', 'x-1'], envOf(a))
      const x1 = await newCert('x-1')
      const x1Body = JSON.stringify(withProof({ token: single.token, nodeId: 'x-1', certPem: x1.certPem, version: VERSION }, x1.keyPem))
      const enrolled = await pinnedFetch(`${a.enrollUrl}/api/v1/nodes/enroll`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: x1Body }, { fingerprint: a.fingerprint })
      const { credential } = (await enrolled.json()) as { credential: string }
      const beat = () => fetch(`${b.url}/api/v1/nodes/register`, { method: 'POST', headers: { authorization: `Bearer ${credential}`, 'content-type': 'application/json' }, body: '{}' })
      expect((await beat()).status).toBe(200)
      expect((await runMuster(['nodes', 'revoke', 'x-1'], { env: envOf(a) })).code).toBe(0)
      const revokedAt = performance.now()
      await waitFor(async () => (await beat()).status === 403, { timeoutMs: 1000, intervalMs: 20, what: 'b refuses the node revoked on a' })
      expect(performance.now() - revokedAt).toBeLessThan(1000)

      // 6. kill -9 of each Platform in turn
      let n = 0
      for (const victim of ['a', 'b'] as const) {
        const dead = victim === 'a' ? a : b
        const alive = victim === 'a' ? b : a
        const env = envOf(alive)
        const port = Number(new URL(dead.url).port)
        await killServeHard(dead) // the engine first: a crash gives no lease up
        const killedAt = performance.now()
        // nodes stay ready: every look at the survivor over the next 16 s shows them ready,
        // and within 15 s of the kill the survivor runs every background loop
        let tookOver = 0
        while (performance.now() - killedAt < 16_000) {
          expect(await readyOn(env, ['w-a', 'w-b'])).toBe(true)
          const runs = (await json<{ platforms: { url: string; runs: string[] }[] }>(['nodes', 'platform'], env)).platforms.find((p) => p.url === alive.url)?.runs ?? []
          if (!tookOver && ['placement', 'probes', 'trust-keys'].every((l) => runs.includes(l))) tookOver = performance.now() - killedAt
          await Bun.sleep(300)
        }
        expect(tookOver).toBeGreaterThan(0)
        expect(tookOver).toBeLessThan(15_000)
        // both Agents moved to the survivor by themselves
        await waitFor(() => usedBy(wa) === alive.url && usedBy(wb) === alive.url, { timeoutMs: 5_000, what: 'the Agents use the survivor' })
        // a new project runs
        const project = `after-${victim}`
        expect((await runMuster(['projects', 'deploy', project, '--replicas', '1', '--', 'sh', '-c', `sleep 600; true ${marker}`], { env })).code).toBe(0)
        await waitFor(async () => (await running(env, project)).length === 1, { timeoutMs: 30_000, what: `${project} runs` })
        // a new machine enrolls through the survivor's listener
        const fresh = `w-new${++n}`
        await join(fresh, alive)
        await waitFor(() => readyOn(env, [fresh]), { timeoutMs: 30_000, what: `${fresh} ready` })
        // the killed Platform restarts on its data directory and rejoins
        const back = await serveOn(dead.dir, db.url, port)
        serves.push(back)
        if (victim === 'a') a = back
        else b = back
        await waitFor(async () => (await json<{ platforms: unknown[] }>(['nodes', 'platform'], envOf(back))).platforms.length === 2, { timeoutMs: 15_000, what: 'the restarted Platform is listed' })
        await waitFor(() => readyOn(envOf(back), ['w-a', 'w-b', fresh]), { timeoutMs: 15_000, what: 'the restarted Platform sees the fleet ready' })
      }
      expect((await running(envOf(a), 'web')).length).toBe(2)
    } finally {
      // SIGTERM: each Agent stops its replicas' process groups before it exits
      for (const ag of agents) await ag.stop()
      for (const s of serves) await s.stop('SIGKILL')
      await db.drop()
    }
  })

  test('muster demo --ha --once: two Platforms on a throwaway PostgreSQL, one killed, the fleet carries on; nothing left behind', { timeout: 240_000 }, async () => {
    const r = await runMuster(['demo', '--ha', '--once'], { timeoutMs: 220_000 })
    expect(r.code).toBe(0)
    for (const step of ['throwaway PostgreSQL', 'platform-a', 'platform-b on the same store', "worker-1 through platform-a", "worker-2 through platform-b", 'ready on both Platforms', 'platform-a places it', 'Killing platform-a', 'after-failover']) expect(r.stdout).toMatch(new RegExp(`✔ .*${step}`))
    const took = Number(r.stdout.match(/ran every background loop ([\d.]+)s after the kill/)?.[1])
    expect(took).toBeLessThan(15)
    expect(r.stdout).toContain('every step worked')
    const dir = r.stdout.match(/muster is running in (\S+),/)![1]!
    expect(existsSync(dir)).toBe(false)
    expect(r.stdout).not.toMatch(/mat_[a-z2-7]{16}\./) // no secret printed
  })
})
