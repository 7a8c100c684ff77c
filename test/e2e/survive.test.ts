// Workloads outlive their Agent, through dist/muster: a
// SIGTERM and a kill -9 of the Agent leave its replicas running; the next
// Agent adopts the same PIDs, stops what the assignments no longer name,
// restarts (and reports) a replica that exited while no Agent ran; and
// `muster agent --stop-replicas` stops them on purpose, with or without an
// Agent running.
import { describe, expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { procStat } from '../../src/replicas/procs.ts'
import { joinWorker, runMuster, startMuster, startServeWithListener, type Daemon } from '../helpers/binary.ts'
import { tmpDir, waitFor } from '../helpers/tmp.ts'

type Env = Record<string, string>

const alive = (pid: number) => {
  const s = procStat(pid)
  return s !== null && s.state !== 'Z'
}

/** The PID of the replica (its shell) whose command carries `marker`. */
function pidOf(marker: string): number | undefined {
  const r = Bun.spawnSync(['pgrep', '-f', `^sh -c sleep 600; true ${marker}$`]).stdout.toString().trim().split('\n').filter(Boolean)
  return r.length === 1 ? Number(r[0]) : undefined
}

async function running(env: Env, project: string): Promise<boolean> {
  const r = await runMuster(['projects', 'show', project, '--json'], { env })
  return r.code === 0 && (JSON.parse(r.stdout) as { placements: { state: string }[] }).placements.every((p) => p.state === 'running')
}

describe('replicas outlive their Agent', () => {
  test('SIGTERM and kill -9 leave replicas running; the next Agent adopts them, stops the unnamed, restarts the exited; --stop-replicas stops them', { timeout: 240_000 }, async () => {
    using dir = tmpDir()
    await using serve = await startServeWithListener(`${dir.path}/platform`, ['--no-local-node'])
    const tag = crypto.randomUUID().slice(0, 8)
    const mark = (p: string) => `${p}-${tag}`
    const env = serve.env
    const { token } = JSON.parse((await runMuster(['nodes', 'enroll-token', 'w1', '--json'], { env })).stdout) as { token: string }
    const agents: Daemon[] = []
    const data = `${dir.path}/w1`
    const startAgent = async () => {
      const a = await startMuster(['agent', '--data-dir', data], { env: { MUSTER_AGENT_HOST: '127.0.0.1', MUSTER_AGENT_HEARTBEAT_MS: '300' } })
      agents.push(a)
      return a
    }
    try {
      agents.push(await joinWorker(dir.path, 'w1', serve, token))
      for (const p of ['keep', 'drop', 'dies']) {
        expect((await runMuster(['projects', 'deploy', p, '--replicas', '1', '--cpu', '10', '--', 'sh', '-c', `sleep 600; true ${mark(p)}`], { env })).code).toBe(0)
      }
      await waitFor(async () => (await running(env, 'keep')) && (await running(env, 'drop')) && (await running(env, 'dies')), { timeoutMs: 45_000, what: 'three replicas running' })
      const keep = (await waitFor(() => pidOf(mark('keep'))))!
      const drop = (await waitFor(() => pidOf(mark('drop'))))!
      const dies = (await waitFor(() => pidOf(mark('dies'))))!

      // 1. SIGTERM: the Agent exits, every replica runs on.
      expect(await agents[0]!.stopLeavingReplicas('SIGTERM')).toBe(0)
      for (const pid of [keep, drop, dies]) expect(alive(pid)).toBe(true)
      // While no Agent runs: one replica is removed from the assignments, another dies.
      expect((await runMuster(['projects', 'remove', 'drop'], { env })).code).toBe(0)
      // Its whole process group (the shell and its sleep), or the sleep would outlive the test.
      process.kill(-dies, 'SIGKILL')
      await waitFor(() => !alive(dies))

      // 2. The next Agent adopts `keep` (same PID), stops `drop`, reports and restarts `dies`.
      const second = await startAgent()
      await second.waitForLog(new RegExp(`replica keep/0 \\(pid ${keep}\\) is still running: adopted`))
      await second.waitForLog(new RegExp(`replica dies/0 \\(pid ${dies}\\) exited while no Agent ran; its exit status is unknown`))
      await waitFor(() => !alive(drop), { timeoutMs: 30_000, what: 'the unassigned replica stopped' })
      const dies2 = (await waitFor(() => pidOf(mark('dies')), { timeoutMs: 30_000, what: 'dies restarted' }))!
      expect(dies2).not.toBe(dies)
      expect(pidOf(mark('keep'))).toBe(keep)
      await waitFor(() => running(env, 'keep'), { what: 'keep reported running by the new Agent' })
      // The exit while the Agent was down is in the replica's log, as the relay shows it.
      const logs = await runMuster(['projects', 'logs', 'dies', '--json'], { env, timeoutMs: 60_000 })
      expect(logs.code).toBe(0)
      expect((JSON.parse(logs.stdout) as { lines: string[] }).lines.join('\n')).toContain(`exited while no Agent ran (pid ${dies}); its exit status is unknown`)

      // 3. kill -9 of the Agent (a crash): still running, adopted again.
      expect(await second.stopLeavingReplicas('SIGKILL')).not.toBe(0)
      expect(alive(keep) && alive(dies2)).toBe(true)
      const third = await startAgent()
      await third.waitForLog(new RegExp(`replica keep/0 \\(pid ${keep}\\) is still running: adopted`))
      await third.waitForLog(new RegExp(`replica dies/0 \\(pid ${dies2}\\) is still running: adopted`))

      // 4. --stop-replicas with the Agent running: it stops them and exits.
      const stopped = await runMuster(['agent', '--stop-replicas', '--data-dir', data], { timeoutMs: 60_000 })
      expect(stopped.code).toBe(0)
      expect(stopped.stdout).toContain(`the Agent (pid ${third.proc.pid}) stopped its replicas and exited`)
      expect(await third.proc.exited).toBe(0)
      expect(alive(keep) || alive(dies2)).toBe(false)

      // 5. --stop-replicas with no Agent running: what the last one recorded is stopped (and only that).
      const fourth = await startAgent()
      const keep2 = (await waitFor(() => pidOf(mark('keep')), { timeoutMs: 30_000, what: 'keep started again' }))!
      await waitFor(() => readFileSync(`${data}/worker/replicas.json`, 'utf8').includes(`"pid": ${keep2}`))
      expect(await fourth.stopLeavingReplicas('SIGTERM')).toBe(0)
      expect(alive(keep2)).toBe(true)
      const offline = await runMuster(['agent', '--stop-replicas', '--data-dir', data], { timeoutMs: 60_000 })
      expect(offline.code).toBe(0)
      expect(offline.stdout).toContain(`keep/0 (pid ${keep2})`)
      expect(alive(keep2)).toBe(false)
    } finally {
      for (const a of agents) await a.stop()
    }
  })

  test('an engine swap of serve --local-node leaves the local replicas running and the new engine adopts them; a stop of serve stops them', { timeout: 180_000 }, async () => {
    using dir = tmpDir()
    const tag = crypto.randomUUID().slice(0, 8)
    await using serve = await startServeWithListener(`${dir.path}/platform`, ['--local-node'])
    const env = serve.env
    // a superadmin's project, so it may run on `local`
    expect((await runMuster(['projects', 'deploy', 'here', '--replicas', '1', '--cpu', '10', '--', 'sh', '-c', `sleep 600; true ${`here-${tag}`}`], { env })).code).toBe(0)
    const pid = (await waitFor(() => pidOf(`here-${tag}`), { timeoutMs: 45_000, what: 'the local replica' }))!
    await waitFor(() => running(env, 'here'))
    try {
      process.kill(serve.proc.pid, 'SIGHUP')
      await serve.waitForLog(/engine swap complete/, 90_000)
      await serve.waitForLog(new RegExp(`replica here/0 \\(pid ${pid}\\) is still running: adopted`))
      expect(pidOf(`here-${tag}`)).toBe(pid)
      await waitFor(() => running(env, 'here'), { what: 'still reported running after the swap' })
      expect(await serve.stop('SIGTERM')).toBe(0)
      expect(alive(pid)).toBe(false)
    } finally {
      if (alive(pid)) process.kill(pid, 'SIGKILL')
    }
  })
})
