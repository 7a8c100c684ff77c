// Workloads end to end through dist/muster: two workers joined over the
// pinned listener, a project with two replicas, refusals, shortfall, drain,
// removal, a stop that stops the replicas — and `muster demo --once`.
import { describe, expect, test } from 'bun:test'
import { resolve } from 'node:path'
import { musterBin, runMuster, startMuster, startServe, type Daemon } from '../helpers/binary.ts'
import { freePort } from '../helpers/node-side.ts'
import { tmpDir, waitFor } from '../helpers/tmp.ts'

interface Project {
  name: string
  replicas: number
  shortfall: number
  reason: string | null
  placements: { replica: number; node: string | null; state: string }[]
}

const replicaPids = (marker: string) => {
  const r = Bun.spawnSync(['pgrep', '-f', marker])
  return r.stdout.toString().trim().split('\n').filter(Boolean)
}

describe('projects through dist/muster', () => {
  test('two workers run two replicas; node-in-use, shortfall, drain, remove, SIGUSR2 stops them', { timeout: 180_000 }, async () => {
    using dir = tmpDir()
    const marker = `muster-e2e-${crypto.randomUUID().slice(0, 8)}`
    await using serve = await startServe(`${dir.path}/platform`, ['--enrollment-port', '0', '--enrollment-address', '127.0.0.1', '--no-local-node'], { MUSTER_PROBE_INTERVAL_MS: '300' })
    const [, enrollUrl, fingerprint] = (await serve.waitForLog(/enrollment listener on (https:\/\/\S+) .*fingerprint (sha256:[0-9a-f]{64})/)) as unknown as [string, string, string]
    const { token: apiToken } = JSON.parse((await runMuster(['admin', 'api-token', '--data-dir', `${dir.path}/platform`, '--json'])).stdout) as { token: string }
    const env = { MUSTER_URL: serve.url, MUSTER_TOKEN: apiToken }
    const show = async (name: string) => JSON.parse((await runMuster(['projects', 'show', name, '--json'], { env })).stdout) as Project
    const agents: Daemon[] = []
    try {
      for (const node of ['w1', 'w2']) {
        const { token } = JSON.parse((await runMuster(['nodes', 'enroll-token', node, '--json'], { env })).stdout) as { token: string }
        const data = `${dir.path}/${node}`
        const joined = await runMuster(['worker', 'join', '--platform-url', enrollUrl, '--node-id', node, '--platform-fingerprint', fingerprint, '--address', '127.0.0.1', '--port', String(await freePort()), '--data-dir', data], { env: { MUSTER_ENROLLMENT_TOKEN: token } })
        expect(joined.code).toBe(0)
        agents.push(await startMuster(['agent', '--data-dir', data], { env: { MUSTER_AGENT_HOST: '127.0.0.1', MUSTER_AGENT_HEARTBEAT_MS: '300' } }))
      }
      await waitFor(async () => {
        const list = JSON.parse((await runMuster(['nodes', 'list', '--json'], { env })).stdout) as { nodes: { name: string; state: string }[] }
        return ['w1', 'w2'].every((n) => list.nodes.find((x) => x.name === n)?.state === 'ready')
      }, { timeoutMs: 45_000, what: 'both workers ready' })

      const deployed = await runMuster(['projects', 'deploy', 'web', '--replicas', '2', '--cpu', '100', '--memory', '32', '--env', `MARK=${marker}`, '--', 'sh', '-c', `echo "$MARK $MUSTER_PROJECT/$MUSTER_REPLICA"; sleep 300; true ${marker}`], { env })
      expect(deployed.code).toBe(0)
      const running = await waitFor(async () => {
        const p = await show('web')
        return p.placements.filter((x) => x.state === 'running').length === 2 ? p : null
      }, { timeoutMs: 45_000, what: 'two running replicas' })
      expect(new Set(running.placements.map((x) => x.node))).toEqual(new Set(['w1', 'w2']))
      expect(replicaPids(marker)).toHaveLength(2)

      // A node with a replica cannot be removed.
      const rm = await runMuster(['nodes', 'remove', 'w1'], { env })
      expect(rm.code).toBe(1)
      expect(rm.stderr).toContain('in use')

      // More than the nodes can hold: a shortfall with its reason.
      const big = JSON.parse((await runMuster(['projects', 'deploy', 'big', '--replicas', '3', '--cpu', '100000', '--json', '--', 'sleep', '1'], { env })).stdout) as Project
      expect(big).toMatchObject({ shortfall: 3, reason: 'insufficient-capacity' })
      const list = JSON.parse((await runMuster(['projects', 'list', '--json'], { env })).stdout) as { projects: Project[] }
      expect(list.projects.map((p) => p.name)).toEqual(['big', 'web'])
      expect((await runMuster(['projects', 'remove', 'big'], { env })).code).toBe(0)

      // Draining w1 moves its replica to w2.
      expect((await runMuster(['nodes', 'drain', 'w1'], { env })).code).toBe(0)
      await waitFor(async () => {
        const p = await show('web')
        return p.placements.every((x) => x.node === 'w2' && x.state === 'running')
      }, { timeoutMs: 45_000, what: 'replicas moved to w2' })
      await waitFor(() => replicaPids(marker).length === 2, { what: 'the old replica stopped on w1' })

      // Removing the project stops its processes on every node.
      expect((await runMuster(['projects', 'remove', 'web'], { env })).code).toBe(0)
      await waitFor(() => replicaPids(marker).length === 0, { timeoutMs: 45_000, what: 'replicas stopped' })
      expect((await runMuster(['projects', 'show', 'web'], { env })).code).toBe(1)

      // An Agent told to stop its replicas (SIGUSR2) stops them; a plain stop leaves them running (test/e2e/survive.test.ts).
      expect((await runMuster(['projects', 'deploy', 'again', '--replicas', '1', '--', 'sh', '-c', `sleep 300; true ${marker}`], { env })).code).toBe(0)
      await waitFor(() => replicaPids(marker).length === 1, { timeoutMs: 45_000, what: 'replica started' })
      for (const a of agents) expect(await a.stopLeavingReplicas('SIGUSR2')).toBe(0)
      expect(replicaPids(marker)).toHaveLength(0)
    } finally {
      for (const a of agents) await a.stop('SIGKILL')
      for (const pid of replicaPids(marker)) process.kill(Number(pid), 'SIGKILL')
    }
  })

  test('muster demo --once does every step and leaves nothing behind', { timeout: 180_000 }, async () => {
    const r = await runMuster(['demo', '--once'], { timeoutMs: 110_000 })
    expect(r.code).toBe(0)
    for (const step of ['Starting a Platform', 'Joining worker-1', 'Joining worker-2', 'both workers to be ready', 'two replicas']) expect(r.stdout).toMatch(new RegExp(`✔ .*${step}`))
    expect(r.stdout).toContain('every step worked')
    const dir = r.stdout.match(/muster is running in (\S+)/)![1]!
    expect(await Bun.file(`${dir}/platform-data/muster.db`).exists()).toBe(false)
    // the printed paths and commands are the real ones
    expect(r.stdout).toContain(`superadmin password: ${dir}/platform-data/platform/initial-superadmin-password`)
    const bin = r.stdout.match(/MUSTER_TOKEN=\$\((\S+) admin api-token --data-dir (\S+)\)/)!
    expect(resolve(bin[1]!)).toBe(await musterBin()) // ./dist/muster from the checkout
    expect(bin[1]).toBe('./dist/muster')
    expect(bin[2]).toBe(`${dir}/platform-data`)
    expect(r.stdout).not.toMatch(/mat_[a-z2-7]{16}\./) // no secret printed
  })
})
