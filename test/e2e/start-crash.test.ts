// A start is recorded before its command runs (src/replicas/spawn.ts), through
// dist/muster: an Agent killed -9 between spawning a replica and recording it
// leaves nothing running, and the next Agent starts exactly one copy — with
// each replica in its own cgroup (as root) and without cgroups, where no
// sweep of unrecorded cgroups could make up for it. The Platform's own node
// (`serve --local-node`, its engine killed the same way) runs the same runner.
// MUSTER_TEST_REPLICA_START_PAUSE_MS (test-only, docs/tunables.md) holds the
// runner in that window after a `test pause:` line, where the test kills it.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { chmodSync, readFileSync } from 'node:fs'
import { killServeHard, runMuster, startMuster, startServe, startServeWithListener, type Daemon } from '../helpers/binary.ts'
import { freePort } from '../helpers/node-side.ts'
import { alive, processesOf, runTag, sweepReplicas } from '../helpers/replica-procs.ts'
import { asRoot } from '../helpers/root.ts'
import { tmpDir, waitFor } from '../helpers/tmp.ts'

const tag = runTag()
const PAUSE = { MUSTER_TEST_REPLICA_START_PAUSE_MS: '120000' }
const COMMAND = ['sh', '-c', 'echo started-once; exec sleep 3600']
const PAUSED = (project: string) => new RegExp(`test pause: replica ${project}/0 started \\(pid (\\d+)\\) and is not recorded yet`)

/** How many times the command ran (its line in the replica's log), and the recorded pid of the replica. */
const startsIn = (log: string): number => readFileSync(log, 'utf8').split('\n').filter((l) => l === 'started-once').length
const recordedPid = (file: string, project: string): number | undefined => (JSON.parse(readFileSync(file, 'utf8')) as { replicas: { project: string; pid: number }[] }).replicas.find((r) => r.project === project)?.pid

describe('a runner killed -9 between spawning a replica and recording it', () => {
  const dir = tmpDir()
  let serve: Awaited<ReturnType<typeof startServeWithListener>>
  const cli = (args: string[], env = serve.env) => runMuster(args, { env, timeoutMs: 60_000 })
  const agentEnv = { MUSTER_AGENT_HOST: '127.0.0.1', MUSTER_AGENT_HEARTBEAT_MS: '300', MUSTER_AGENT_STOP_GRACE_MS: '2000' }
  const state = async (project: string, env = serve.env) => (JSON.parse((await cli(['projects', 'show', project, '--json'], env)).stdout) as { placements: { state: string }[] }).placements[0]?.state

  /** After the crash and the next runner's start: exactly one copy runs, the recorded one, and the command ran once. */
  async function exactlyOne(project: string, paused: number, log: string, records: string, env = serve.env): Promise<void> {
    await waitFor(async () => (await state(project, env)) === 'running', { timeoutMs: 60_000, what: `${project} running under the next runner` })
    await waitFor(() => !alive(paused) && processesOf(project).length === 1 && startsIn(log) >= 1, {
      timeoutMs: 20_000,
      what: `one copy of ${project}: the one paused before its record (pid ${paused}) gone, the next runner's running (running: ${processesOf(project).join(' ')})`,
    })
    expect(processesOf(project)).toEqual([recordedPid(records, project)!])
    expect(startsIn(log)).toBe(1)
  }

  beforeAll(async () => {
    sweepReplicas()
    chmodSync(dir.path, 0o711)
    serve = await startServeWithListener(`${dir.path}/platform`, ['--no-local-node'])
  })
  afterAll(async () => {
    await serve?.stop()
    sweepReplicas(tag)
    dir[Symbol.dispose]()
  })

  const modes = [...(asRoot ? [{ name: 'each replica in its own cgroup (root)', env: {} }] : []), { name: 'without cgroups', env: { MUSTER_AGENT_CGROUPS: 'off' } }]
  for (const [i, mode] of modes.entries()) {
    test(`an Agent, ${mode.name}: exactly one copy runs afterwards, and its command ran once`, { timeout: 180_000 }, async () => {
      const node = `k${i}`
      const data = `${dir.path}/${node}`
      const project = `once${i}-${tag}`
      const { token } = JSON.parse((await cli(['nodes', 'enroll-token', node, '--json'])).stdout) as { token: string }
      const joined = await runMuster(['worker', 'join', '--platform-url', serve.enrollUrl, '--node-id', node, '--platform-fingerprint', serve.fingerprint, '--address', '127.0.0.1', '--port', String(await freePort()), '--data-dir', data, '--label', `pool=${node}`], { env: { MUSTER_ENROLLMENT_TOKEN: token } })
      expect(joined.code).toBe(0)
      let agent: Daemon = await startMuster(['agent', '--data-dir', data], { env: { ...agentEnv, ...mode.env, ...PAUSE } })
      try {
        await waitFor(async () => (JSON.parse((await cli(['nodes', 'list', '--json'])).stdout) as { nodes: { name: string; state: string }[] }).nodes.find((n) => n.name === node)?.state === 'ready', { timeoutMs: 60_000, what: `${node} ready` })
        expect((await cli(['projects', 'deploy', project, '--replicas', '1', '--cpu', '10', '--memory', '32', '--node-label', `pool=${node}`, '--', ...COMMAND])).code).toBe(0)
        const paused = Number((await agent.waitForLog(PAUSED(project)))[1])
        expect(alive(paused)).toBe(true)
        agent.proc.kill('SIGKILL')
        await agent.proc.exited
        agent = await startMuster(['agent', '--data-dir', data], { env: { ...agentEnv, ...mode.env } })
        await exactlyOne(project, paused, `${data}/worker/logs/${project}-0.log`, `${data}/worker/replicas.json`)
        expect((await cli(['projects', 'remove', project])).code).toBe(0)
        await waitFor(() => processesOf(project).length === 0, { timeoutMs: 30_000, what: `${project} stopped by projects remove` })
      } finally {
        await agent.stop()
      }
    })
  }

  test("the Platform's own node, its engine killed the same way: exactly one copy runs afterwards", { timeout: 180_000 }, async () => {
    const data = `${dir.path}/local`
    const project = `oncel-${tag}`
    let local = await startServe(data, ['--local-node'], PAUSE)
    try {
      const { token } = JSON.parse((await runMuster(['admin', 'api-token', '--data-dir', data, '--json'])).stdout) as { token: string }
      const env = { MUSTER_URL: local.url, MUSTER_TOKEN: token }
      // The engine starts the replica within the deploy's request: its answer never comes (the engine dies in the pause).
      const deploying = cli(['projects', 'deploy', project, '--replicas', '1', '--cpu', '10', '--memory', '32', '--', ...COMMAND], env)
      const paused = Number((await local.waitForLog(PAUSED(project)))[1])
      expect(alive(paused)).toBe(true)
      await killServeHard(local)
      await deploying
      local = await startServe(data, ['--local-node'])
      const next = { ...env, MUSTER_URL: local.url }
      await exactlyOne(project, paused, `${data}/platform/local-node/logs/${project}-0.log`, `${data}/platform/local-node/replicas.json`, next)
    } finally {
      await local.stop()
      await waitFor(() => processesOf(project).length === 0, { timeoutMs: 30_000, what: `${project} stopped with serve` })
    }
  })
})
