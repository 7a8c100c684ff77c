// What install.sh and the bootstrap line promise, on a real systemd
// (test/helpers/machines.ts): a Platform on one namespace host, a booted
// Debian 12 on another. The printed bootstrap line runs inside the machine
// as root: it installs the worker role, joins, and starts muster-agent.service,
// which runs as `muster`; a project runs there with its logs, as a uid of its
// own, in a cgroup of its own under the unit's delegated cgroup (Delegate=yes;
// the Agent in its `agent` leaf); a replica that calls setsid and double-forks
// dies with its project; doctor on the machine is content; a crashed Agent is
// restarted by systemd and adopts the replica that kept running
// (KillMode=process); a revoked node's Agent exits with
// status 3 and systemd leaves it stopped; `install.sh --uninstall --purge`
// leaves the machine as it found it. The line leaves nothing in /tmp.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { chmodSync, mkdirSync, symlinkSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { musterBin } from '../helpers/binary.ts'
import { describeWithMachines, Machine, machinesUnavailable } from '../helpers/machines.ts'
import { Network, runOn, startOn, type Started } from '../helpers/netns.ts'
import { tmpDir, waitFor } from '../helpers/tmp.ts'

const why = await machinesUnavailable()
const INSTALL_SH = resolve(import.meta.dir, '../../install.sh')

/** Everything on the machine's own filesystem but what the kernel, the journal and temporary files keep changing. */
const SNAPSHOT =
  "find / -xdev \\( -path /proc -o -path /sys -o -path /dev -o -path /run -o -path /tmp -o -path /var/tmp -o -path /var/log -o -path /opt/muster-test \\) -prune -o -printf '%p %u:%g %m\\n' | sort; " +
  'sha256sum /etc/passwd /etc/group /etc/shadow /etc/gshadow'

interface UnitState {
  ActiveState: string
  SubState: string
  Result: string
  MainPID: string
  NRestarts: string
  ExecMainStatus: string
  User: string
}

describeWithMachines(why, 'install.sh and the bootstrap line under systemd', () => {
  let net: Network
  let machine: Machine | undefined
  const started: Started[] = []
  const dir = tmpDir('muster-machines-')
  beforeAll(() => {
    net = Network.create(['p', 'm1'], 5)
  })
  afterAll(async () => {
    await machine?.stop()
    for (const s of started.reverse()) await s.stop()
    net?.destroy()
    dir[Symbol.dispose]()
  })

  test('bootstrap line → muster-agent.service as muster → a project with logs → restart adopts → revoke stops for good → uninstall --purge leaves nothing', { timeout: 400_000 }, async () => {
    const bin = await musterBin()
    const [p, m1] = [net.host('p'), net.host('m1')]
    chmodSync(dir.path, 0o755)
    mkdirSync(join(dir.path, 'bin'))
    symlinkSync(bin, join(dir.path, 'bin', 'muster'))
    const operator = { XDG_CONFIG_HOME: join(dir.path, 'config'), PATH: `${join(dir.path, 'bin')}:${process.env.PATH}` }
    const muster = (args: string[]) => runOn(p, [bin, ...args], { env: operator })
    const data = join(dir.path, 'platform')
    const serve = startOn(p, [bin, 'serve', '--data-dir', data, '--host', p.address, '--enrollment-port', '7443', '--no-local-node'], { MUSTER_PROBE_INTERVAL_MS: '500' })
    started.push(serve)
    await serve.waitForLog(/enrollment listener on https:\/\//)
    expect((await muster(['login', '--platform-url', `https://${p.address}:7380`, '--platform-ca-file', join(data, 'platform/ca.pem'), '--identifier', 'superadmin', '--password-file', join(data, 'platform/initial-superadmin-password')])).code).toBe(0)
    const created = await muster(['nodes', 'join-token', 'create', '--max-uses', '1', '--name-pattern', 'm*'])
    expect(created.code).toBe(0)
    const token = created.stdout.trim()
    const line = created.stderr.split('\n').map((l) => l.trim()).find((l) => l.startsWith('c=$(mktemp)'))!.replace('NAME', 'm1')

    machine = await Machine.boot(m1, { binds: [{ host: INSTALL_SH, machine: '/opt/muster-test/install.sh', readOnly: true }] })
    const m = machine
    process.stderr.write(`machines: m1 booted in ${m.bootMs} ms\n`)
    const before = (await m.sh(SNAPSHOT)).stdout
    const tmpFiles = "ls -A /tmp | grep -v '^systemd-private-'"
    const tmpBefore = (await m.sh(tmpFiles)).stdout

    // 1. the printed line, as root inside the machine, the token from the environment
    const boot = await m.sh(line, { env: { MUSTER_ENROLLMENT_TOKEN: token }, timeoutMs: 240_000 })
    expect(boot.stderr).not.toContain(token)
    expect(boot.stdout).toContain(`joined https://${p.address}:7443 as m1`)
    expect(boot.stdout).toContain('the Agent runs as muster-agent.service')
    expect(boot.code).toBe(0)
    // nothing of the line is left in /tmp (its CA file included)
    expect((await m.sh(tmpFiles)).stdout).toBe(tmpBefore)

    const unit = async (): Promise<UnitState> => {
      const r = await m.run(['systemctl', 'show', 'muster-agent.service', '-p', 'ActiveState,SubState,Result,MainPID,NRestarts,ExecMainStatus,User'])
      return Object.fromEntries(r.stdout.trim().split('\n').map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)])) as unknown as UnitState
    }
    const uidOf = async (pid: string | number) => /^Uid:\s+(\d+)/m.exec((await m.run(['cat', `/proc/${pid}/status`])).stdout)?.[1]
    const id = async (name: string) => (await m.run(['id', '-u', name])).stdout.trim()

    // 2. the unit is active, its main process runs as muster
    const first = await unit()
    expect(first).toMatchObject({ ActiveState: 'active', SubState: 'running', User: 'muster', NRestarts: '0' })
    // (Type=simple: systemd forks, then the child drops to muster while it sets up the sandbox and execs)
    const musterUid = await id('muster')
    await waitFor(async () => (await uidOf(first.MainPID)) === musterUid, { timeoutMs: 10_000, what: `the Agent (pid ${first.MainPID}) running as muster (${musterUid})` })
    expect((await m.run(['systemctl', 'is-enabled', 'muster-agent.service'])).stdout.trim()).toBe('enabled')

    // 3. ready; a project runs there and its output comes back through the Platform
    const nodeState = async () => (JSON.parse((await muster(['nodes', 'list', '--json'])).stdout) as { nodes: { name: string; state: string }[] }).nodes.find((n) => n.name === 'm1')?.state
    await waitFor(async () => (await nodeState()) === 'ready', { timeoutMs: 60_000, what: 'm1 ready' })
    expect((await muster(['projects', 'deploy', 'web', '--replicas', '1', '--cpu', '10', '--memory', '32', '--', 'sh', '-c', 'echo "hello from $(id -u)"; exec sleep 3600'])).code).toBe(0)
    const lines = await waitFor(async () => {
      const r = await muster(['projects', 'logs', 'web', '--replica', '0', '--json'])
      const l = r.code === 0 ? (JSON.parse(r.stdout) as { lines: string[] }).lines : []
      return l.some((x) => x.startsWith('hello from ')) ? l : null
    }, { timeoutMs: 90_000, what: "web's log line" })
    const replicaUid = lines.find((x) => x.startsWith('hello from '))!.slice('hello from '.length)
    // the replica runs as neither root nor muster (the Agent's account)
    expect(replicaUid).not.toBe('0')
    expect(replicaUid).not.toBe(musterUid)
    const replicaPid = async () => (await m.run(['pgrep', '-u', replicaUid, '-x', 'sleep'])).stdout.trim()
    const pidBefore = await replicaPid()
    expect(pidBefore).toMatch(/^\d+$/)
    // the replica in a cgroup of its own under the unit's delegated cgroup, the Agent in its leaf beside it
    const cgroupOf = async (pid: string) => /^0::(.*)$/m.exec((await m.run(['cat', `/proc/${pid}/cgroup`])).stdout)?.[1]
    expect(await cgroupOf(pidBefore)).toMatch(/^\/system\.slice\/muster-agent\.service\/web\.0\.\d+\.\d+$/)
    expect(await cgroupOf(first.MainPID)).toBe('/system.slice/muster-agent.service/agent')
    // a replica that leaves its session and double-forks dies with its project
    const alive = async (project: string) => (await m.sh(`grep -l -a 'MUSTER_PROJECT=${project}' /proc/[0-9]*/environ 2>/dev/null | grep -v self || true`)).stdout.trim()
    expect((await muster(['projects', 'deploy', 'esc', '--replicas', '1', '--cpu', '10', '--memory', '32', '--', 'sh', '-c', 'setsid sh -c "exec sleep 3001" & sh -c "sleep 3002 & exit 0"; exec sleep 3600'])).code).toBe(0)
    await waitFor(async () => (await alive('esc')).split('\n').length >= 3, { timeoutMs: 60_000, what: "esc's three processes" })
    expect((await muster(['projects', 'remove', 'esc'])).code).toBe(0)
    await waitFor(async () => (await alive('esc')) === '', { timeoutMs: 30_000, what: 'every process of esc gone' })
    // doctor on the machine: replicas cannot read the key; their containment is said as it is
    const doctor = JSON.parse((await m.run(['muster', 'doctor', '--json'])).stdout) as { checks: { name: string; status: string; message: string }[] }
    expect(doctor.checks.find((c) => c.name === 'replica-isolation')).toMatchObject({ status: 'ok' })
    expect(doctor.checks.find((c) => c.name === 'replica-containment')?.message).toContain('each replica runs in its own cgroup under /sys/fs/cgroup/unified/system.slice/muster-agent.service')

    // 4. the Agent crashes: systemd restarts it and the replica keeps running, adopted by the new Agent
    expect((await m.run(['kill', '-9', first.MainPID])).code).toBe(0)
    const restarted = await waitFor(async () => {
      const u = await unit()
      return u.ActiveState === 'active' && u.MainPID !== first.MainPID && u.MainPID !== '0' ? u : null
    }, { timeoutMs: 30_000, what: 'muster-agent restarted by systemd' })
    expect(restarted.NRestarts).toBe('1')
    await waitFor(async () => (await cgroupOf(restarted.MainPID)) === '/system.slice/muster-agent.service/agent', { timeoutMs: 30_000, what: 'the new Agent in its leaf' })
    await waitFor(async () => (await m.run(['journalctl', '-u', 'muster-agent', '--no-pager', '-o', 'cat'])).stdout.includes('replica web/0 (pid '), { timeoutMs: 30_000, what: 'the new Agent adopting web/0' })
    expect(await replicaPid()).toBe(pidBefore)

    // 5. revoked: the Agent exits with status 3 and systemd does not restart it (failed, not auto-restart)
    expect((await muster(['nodes', 'revoke', 'm1'])).code).toBe(0)
    const stopped = await waitFor(async () => {
      const u = await unit()
      return u.ActiveState === 'failed' ? u : null
    }, { timeoutMs: 60_000, what: 'muster-agent failed with status 3' })
    expect(stopped).toMatchObject({ SubState: 'failed', Result: 'exit-code', ExecMainStatus: '3', NRestarts: '1' })

    // 6. uninstall --purge: the replicas are stopped and nothing of muster is left
    const un = await m.run(['sh', '/opt/muster-test/install.sh', '--uninstall', '--purge'], { timeoutMs: 120_000 })
    expect(un.stderr).toBe('')
    expect(un.code).toBe(0)
    expect(un.stdout).toContain('muster (worker) is uninstalled')
    expect(await replicaPid()).toBe('')
    expect((await m.run(['systemctl', 'list-units', '--all', '--no-legend', 'muster*'])).stdout.trim()).toBe('')
    expect((await m.run(['id', 'muster'])).code).not.toBe(0)
    const after = (await m.sh(SNAPSHOT)).stdout
    expect(after).toBe(before)
  })
})
