// Replica containment, performed through dist/muster with a root Agent
// (docs/security.md, "Replica containment"):
//  - a replica that leaves its process group (setsid) and double-forks is
//    still stopped by `projects remove` and by `agent --stop-replicas`: every
//    process of the replica lives in its cgroup, and the cgroup is killed;
//  - a replica past its --memory is killed by the kernel and reported
//    (out-of-memory), the node and its other replicas carry on; --cpu caps it;
//  - each project runs as a uid of its own: one project can neither read
//    another's environment or files nor signal its processes, and none reads
//    the node's key (the Agent runs as root with no account to switch to);
//  - an Agent restarted between start and stop adopts the replicas with
//    their cgroups, so the escaped processes still die with them.
// Processes are found by the MUSTER_PROJECT=… each replica (and all it starts) has in its environment.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { chmodSync, existsSync, readdirSync, readFileSync } from 'node:fs'
import { runMuster, startMuster, startServeWithListener, type Daemon } from '../helpers/binary.ts'
import { freePort } from '../helpers/node-side.ts'
import { processesOf, runTag, sessionOf, sweepReplicas, uidOf } from '../helpers/replica-procs.ts'
import { describeAsRoot } from '../helpers/root.ts'
import { tmpDir, waitFor } from '../helpers/tmp.ts'

// Project names end in -<pid>t<random>: a run killed before its afterAll (replicas outlive their Agent) is swept by the next.
const tag = runTag()

const cpuTicks = (pid: number) => {
  const f = readFileSync(`/proc/${pid}/stat`, 'latin1').slice(readFileSync(`/proc/${pid}/stat`, 'latin1').lastIndexOf(')') + 2).split(' ')
  return Number(f[11]) + Number(f[12]) // utime + stime (fields 14, 15)
}

// Leaves its process group twice over: a setsid'd child, and a grandchild whose parent exits at once.
const ESCAPE = 'setsid sh -c "exec sleep 3001" & sh -c "sleep 3002 & exit 0"; echo escaped; exec sleep 3600'

describeAsRoot('replica containment', () => {
  const dir = tmpDir()
  let serve: Awaited<ReturnType<typeof startServeWithListener>>
  let agent: Daemon
  let data: string
  /** The replica cgroups of `project` under the Agent's subtree (the one isolation.json names). */
  const cgroupsOf = (project: string): string[] => {
    const base = (JSON.parse(readFileSync(`${data}/worker/isolation.json`, 'utf8')) as { cgroup?: string }).cgroup
    return base && existsSync(base) ? readdirSync(base).filter((n) => n.startsWith(`${project}.`)) : []
  }
  const cli = (args: string[]) => runMuster(args, { env: serve.env, timeoutMs: 60_000 })
  const agentEnv = { MUSTER_AGENT_HOST: '127.0.0.1', MUSTER_AGENT_HEARTBEAT_MS: '300', MUSTER_AGENT_STOP_GRACE_MS: '2000' }
  const placed = (project: string, want: number) =>
    waitFor(async () => {
      const pids = processesOf(project)
      return pids.length >= want ? pids : null
    }, { timeoutMs: 60_000, what: `${project}'s processes` })
  /** ESCAPE's three sleeps once they run, the escapees having left the replica's session. */
  const escaped = (project: string) =>
    waitFor(() => {
      const pids = processesOf(project).filter((pid) => /^sleep\x00(300[12]|3600)\x00/.test(readFileSync(`/proc/${pid}/cmdline`, 'latin1')))
      return pids.length === 3 && new Set(pids.map(sessionOf)).size > 1 ? pids : null
    }, { timeoutMs: 60_000, what: `${project}'s escaped processes` })
  const logLines = async (project: string, has: string) =>
    waitFor(async () => {
      const r = await cli(['projects', 'logs', project, '--replica', '0', '--json'])
      const lines = r.code === 0 ? (JSON.parse(r.stdout) as { lines: string[] }).lines : []
      return lines.some((l) => l.includes(has) && !l.includes(' starting revision ')) ? lines : null
    }, { timeoutMs: 60_000, what: `"${has}" in ${project}'s log` })

  beforeAll(async () => {
    sweepReplicas()
    chmodSync(dir.path, 0o711)
    serve = await startServeWithListener(`${dir.path}/platform`, ['--no-local-node'])
    const { token } = JSON.parse((await cli(['nodes', 'enroll-token', 'c1', '--json'])).stdout) as { token: string }
    data = `${dir.path}/c1`
    const joined = await runMuster(['worker', 'join', '--platform-url', serve.enrollUrl, '--node-id', 'c1', '--platform-fingerprint', serve.fingerprint, '--address', '127.0.0.1', '--port', String(await freePort()), '--data-dir', data], { env: { MUSTER_ENROLLMENT_TOKEN: token } })
    expect(joined.code).toBe(0)
    agent = await startMuster(['agent', '--data-dir', data], { env: agentEnv })
    await waitFor(async () => (JSON.parse((await cli(['nodes', 'list', '--json'])).stdout) as { nodes: { name: string; state: string }[] }).nodes.some((n) => n.state === 'ready'), { timeoutMs: 60_000, what: 'c1 ready' })
  })
  afterAll(async () => {
    await agent?.stop()
    await serve?.stop()
    sweepReplicas(tag)
    dir[Symbol.dispose]()
  })

  test('a replica that calls setsid and double-forks dies with `projects remove`, and with `agent --stop-replicas` after the Agent restarted', { timeout: 240_000 }, async () => {
    const a = `escape-${tag}`
    expect((await cli(['projects', 'deploy', a, '--replicas', '1', '--cpu', '10', '--memory', '32', '--', 'sh', '-c', ESCAPE])).code).toBe(0)
    const before = await escaped(a)
    expect(before.length).toBe(3)
    // all three in the replica's own cgroup
    for (const pid of before) expect(readFileSync(`/proc/${pid}/cgroup`, 'utf8')).toMatch(new RegExp(`^0::/.*/${a}\\.0\\.\\d+\\.\\d+$`, 'm'))
    expect((await cli(['projects', 'remove', a])).code).toBe(0)
    await waitFor(() => processesOf(a).length === 0, { timeoutMs: 30_000, what: `every process of ${a} gone after projects remove (left: ${processesOf(a).join(' ')})` })
    await waitFor(() => cgroupsOf(a).length === 0, { timeoutMs: 10_000, what: `${a}'s cgroup removed (${cgroupsOf(a).join(' ')})` })

    // The same escape, then the Agent restarts (the replica is adopted with its cgroup), then --stop-replicas.
    const b = `escape2-${tag}`
    expect((await cli(['projects', 'deploy', b, '--replicas', '1', '--cpu', '10', '--memory', '32', '--', 'sh', '-c', ESCAPE])).code).toBe(0)
    const running = await escaped(b)
    await agent.stopLeavingReplicas()
    expect(processesOf(b).sort()).toEqual(running.sort()) // the replicas outlive their Agent
    agent = await startMuster(['agent', '--data-dir', data], { env: agentEnv })
    await agent.waitForLog(new RegExp(`replica ${b}/0 \\(pid \\d+\\) is still running: adopted with its cgroup`))
    await waitFor(async () => (JSON.parse((await cli(['projects', 'show', b, '--json'])).stdout) as { placements: { state: string }[] }).placements[0]?.state === 'running', { timeoutMs: 30_000, what: `${b} running under the new Agent` })
    expect(processesOf(b).sort()).toEqual(running.sort()) // every one of them adopted, none killed as a stray
    const stopped = await runMuster(['agent', '--stop-replicas', '--data-dir', data], { timeoutMs: 60_000 })
    expect(stopped.code).toBe(0)
    await waitFor(() => processesOf(b).length === 0, { timeoutMs: 30_000, what: `every process of ${b} gone after --stop-replicas (left: ${processesOf(b).join(' ')})` })
    expect(cgroupsOf(b)).toEqual([]) // found through the record, killed and removed
    agent = await startMuster(['agent', '--data-dir', data], { env: agentEnv })
  })

  test('a replica past its memory is killed and reported; --cpu caps it; the node carries on', { timeout: 240_000 }, async () => {
    const calm = `calm-${tag}`
    const hog = `hog-${tag}`
    const spin = `spin-${tag}`
    expect((await cli(['projects', 'deploy', calm, '--replicas', '1', '--cpu', '10', '--memory', '16', '--', 'sh', '-c', 'exec sleep 3600'])).code).toBe(0)
    // 64 MB in a shell variable, against a 16 MB limit
    expect((await cli(['projects', 'deploy', hog, '--replicas', '1', '--cpu', '500', '--memory', '16', '--', 'sh', '-c', 'echo hog-start; x=$(head -c 64000000 /dev/zero | tr "\\0" a); echo hog-survived; exec sleep 3600'])).code).toBe(0)
    expect((await cli(['projects', 'deploy', spin, '--replicas', '1', '--cpu', '100', '--memory', '16', '--', 'sh', '-c', 'while :; do :; done'])).code).toBe(0)
    const [calmPid] = await placed(calm, 1)
    const lines = await logLines(hog, 'past its memory limit')
    expect(lines.join('\n')).toContain('--- killed by the kernel: past its memory limit (16 MB)')
    expect(lines).not.toContain('hog-survived')
    const shown = await waitFor(async () => {
      const p = JSON.parse((await cli(['projects', 'show', hog, '--json'])).stdout) as { placements: { state: string; exitCode?: number | null; reason?: string }[] }
      return p.placements[0]?.reason === 'out-of-memory' ? p.placements[0] : null
    }, { timeoutMs: 30_000, what: `${hog} reported out of memory` })
    expect(shown.exitCode).toBe(137)
    expect((await cli(['projects', 'show', hog])).stdout).toContain('out of memory')
    // the node and the other project are fine
    expect(agent.proc.exitCode).toBeNull()
    expect(processesOf(calm)).toContain(calmPid!)

    // --cpu 100: a tenth of a core, over two seconds of a busy loop
    const [spinPid] = await placed(spin, 1)
    const t0 = cpuTicks(spinPid!)
    const w0 = performance.now()
    await waitFor(() => performance.now() - w0 > 2000, { timeoutMs: 5000, intervalMs: 100 })
    const used = (cpuTicks(spinPid!) - t0) / 100 / ((performance.now() - w0) / 1000)
    expect(used).toBeLessThan(0.2)
    for (const p of [calm, hog, spin]) expect((await cli(['projects', 'remove', p])).code).toBe(0)
  })

  test('each project its own uid: no project reads or signals another, none reads the node key', { timeout: 240_000 }, async () => {
    const alice = `alice-${tag}`
    const mallory = `mallory-${tag}`
    const secretFile = `/tmp/${alice}-secret`
    expect((await cli(['projects', 'deploy', alice, '--replicas', '1', '--cpu', '10', '--memory', '32', '--env', 'ALICE_TOKEN=alice-s3cret', '--', 'sh', '-c', `echo alice-file-s3cret > ${secretFile}; while :; do sleep 1; done`, alice])).code).toBe(0)
    // alice's shell: the one process with alice's name on its (public) command line
    const alicePid = (await placed(alice, 1)) && (await waitFor(() => processesOf(alice).find((pid) => readFileSync(`/proc/${pid}/cmdline`, 'latin1').endsWith(`${alice}\0`)), { what: "alice's shell" }))
    await waitFor(() => existsSync(secretFile), { what: "alice's file" })
    const ATTACK = [
      // alice's pid is public (ps shows it); the test hands it over as $A
      'echo "ALICE:$A"',
      'echo "ENVIRON:$(tr "\\000" " " < /proc/$A/environ 2>/dev/null || true)"',
      `echo "FILE:$(cat ${secretFile} 2>/dev/null || true)"`,
      'if kill -0 "$A" 2>/dev/null; then echo SIGNAL:yes; else echo SIGNAL:no; fi',
      'D=$(tr "\\000" "\\n" < /proc/$PPID/cmdline | sed -n "/^--data-dir$/{n;p;}")',
      'echo "KEY:$(cat "$D/worker/agent.key" 2>/dev/null | head -c 60 || true)"',
      'echo "UID:$(id -u)"',
      'echo ATTACK-DONE; exec sleep 3600',
    ].join('; ')
    expect((await cli(['projects', 'deploy', mallory, '--replicas', '1', '--cpu', '10', '--memory', '32', '--env', `A=${alicePid}`, '--', 'sh', '-c', ATTACK])).code).toBe(0)
    const lines = await logLines(mallory, 'ATTACK-DONE')
    const field = (k: string) => lines.find((l) => l.startsWith(`${k}:`))?.slice(k.length + 1) ?? ''
    expect(field('ALICE')).toBe(String(alicePid))
    expect(field('ENVIRON')).toBe('')
    expect(field('FILE')).toBe('')
    expect(field('SIGNAL')).toBe('no')
    expect(field('KEY')).toBe('')
    expect(lines.join('\n')).not.toContain('s3cret')
    // two uids of muster's range, neither root
    const [malloryPid] = await placed(mallory, 1)
    const [ua, um] = [uidOf(alicePid!), uidOf(malloryPid!)]
    expect(ua).not.toBe(um)
    for (const u of [ua, um]) expect(u).toBeGreaterThanOrEqual(1_879_048_192)
    expect(field('UID')).toBe(String(um))
    expect(processesOf(alice)).toContain(alicePid!) // still alive
    const doctor = JSON.parse((await runMuster(['doctor', '--data-dir', data, '--json'])).stdout) as { checks: { name: string; status: string; message: string }[] }
    expect(doctor.checks.find((c) => c.name === 'replica-isolation')).toMatchObject({ status: 'ok', message: expect.stringContaining('a uid of its own') })
    for (const p of [alice, mallory]) expect((await cli(['projects', 'remove', p])).code).toBe(0)
  })
  test('without cgroups (MUSTER_AGENT_CGROUPS=off) the escapees still die: every process of the project\'s own uid is killed with its last replica', { timeout: 240_000 }, async () => {
    const { token } = JSON.parse((await cli(['nodes', 'enroll-token', 'c2', '--json'])).stdout) as { token: string }
    const flat = `${dir.path}/c2`
    expect((await runMuster(['worker', 'join', '--platform-url', serve.enrollUrl, '--node-id', 'c2', '--platform-fingerprint', serve.fingerprint, '--address', '127.0.0.1', '--port', String(await freePort()), '--data-dir', flat, '--label', 'pool=flat'], { env: { MUSTER_ENROLLMENT_TOKEN: token } })).code).toBe(0)
    const second = await startMuster(['agent', '--data-dir', flat], { env: { ...agentEnv, MUSTER_AGENT_CGROUPS: 'off' } })
    try {
      await waitFor(async () => (JSON.parse((await cli(['nodes', 'list', '--json'])).stdout) as { nodes: { name: string; state: string }[] }).nodes.find((n) => n.name === 'c2')?.state === 'ready', { timeoutMs: 60_000, what: 'c2 ready' })
      const c = `escape3-${tag}`
      expect((await cli(['projects', 'deploy', c, '--replicas', '1', '--cpu', '10', '--memory', '32', '--node-label', 'pool=flat', '--', 'sh', '-c', ESCAPE])).code).toBe(0)
      const pids = await escaped(c)
      expect(new Set(pids.map(uidOf)).size).toBe(1)
      expect(JSON.parse(readFileSync(`${flat}/worker/isolation.json`, 'utf8'))).toMatchObject({ isolated: true, containment: 'process-group' })
      expect((await cli(['projects', 'remove', c])).code).toBe(0)
      await waitFor(() => processesOf(c).length === 0, { timeoutMs: 30_000, what: `every process of ${c} gone (left: ${processesOf(c).join(' ')})` })
    } finally {
      await second.stop()
    }
  })
})
