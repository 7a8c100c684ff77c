// A rollout on a real systemd (docs/upgrading.md "Where versions live"): a
// Platform on one namespace host and a booted Debian 12 on another
// (test/helpers/machines.ts). The printed bootstrap line installs the worker;
// install.sh then puts an older build of this tree in place (the unit
// restarts into it), and a rollout of dist/muster follows: the unit's main
// process — the same PID, no restart — execs the new binary from
// /var/lib/muster/versions (the hardened unit cannot write /usr/local/bin nor
// call systemctl), and KillMode=process keeps the replica. Then two faulty
// releases: one that exits at start and one that never heartbeats; each is
// rolled back — systemd restarts the unit (Restart=on-failure) and the old
// binary runs again — and the replica is never touched.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { chmodSync, copyFileSync, mkdirSync, symlinkSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { VERSION } from '../../src/version.ts'
import { musterBin } from '../helpers/binary.ts'
import { buildWithVersion, faultyBuild } from '../helpers/builds.ts'
import { describeWithMachines, Machine, machinesUnavailable } from '../helpers/machines.ts'
import { Network, runOn, startOn, type Started } from '../helpers/netns.ts'
import { tmpDir, waitFor } from '../helpers/tmp.ts'

const why = await machinesUnavailable()
const OLD = '0.0.9'
const INSTALL_SH = resolve(import.meta.dir, '../../install.sh')

describeWithMachines(why, 'a rollout under systemd', () => {
  let net: Network
  let machine: Machine | undefined
  const started: Started[] = []
  const dir = tmpDir('muster-systemd-upgrade-')
  beforeAll(() => {
    net = Network.create(['p', 'm1'], 6)
  })
  afterAll(async () => {
    await machine?.stop()
    for (const s of started.reverse()) await s.stop()
    net?.destroy()
    dir[Symbol.dispose]()
  })

  test('bootstrap, an older build by install.sh, a rollout execs the new binary in the unit (same PID), faulty releases rolled back by a restart of the unit', { timeout: 600_000 }, async () => {
    const bin = await musterBin()
    const old = await buildWithVersion(OLD)
    const [p, m1] = [net.host('p'), net.host('m1')]
    chmodSync(dir.path, 0o755)
    const share = join(dir.path, 'share')
    mkdirSync(share, { mode: 0o755 })
    copyFileSync(old, join(share, 'muster-old'))
    copyFileSync(INSTALL_SH, join(share, 'install.sh'))
    mkdirSync(join(dir.path, 'bin'))
    symlinkSync(bin, join(dir.path, 'bin', 'muster'))
    const operator = { XDG_CONFIG_HOME: join(dir.path, 'config'), PATH: `${join(dir.path, 'bin')}:${process.env.PATH}` }
    const muster = (args: string[]) => runOn(p, [bin, ...args], { env: operator, timeoutMs: 180_000 })
    const json = async <T>(args: string[]): Promise<T> => {
      const r = await muster([...args, '--json'])
      if (r.code !== 0) throw new Error(`muster ${args.join(' ')}: ${r.stderr}`)
      return JSON.parse(r.stdout) as T
    }
    const data = join(dir.path, 'platform')
    const serve = startOn(p, [bin, 'serve', '--data-dir', data, '--host', p.address, '--enrollment-port', '7443', '--no-local-node'], { MUSTER_PROBE_INTERVAL_MS: '500', MUSTER_ROLLOUT_TICK_MS: '300' })
    started.push(serve)
    await serve.waitForLog(/enrollment listener on https:\/\//)
    expect((await muster(['login', '--platform-url', `https://${p.address}:7380`, '--platform-ca-file', join(data, 'platform/ca.pem'), '--identifier', 'superadmin', '--password-file', join(data, 'platform/initial-superadmin-password')])).code).toBe(0)
    const key = join(dir.path, 'release.key')
    expect((await muster(['releases', 'keygen', '--out', key])).code).toBe(0)
    for (const b of [old, bin]) expect((await muster(['releases', 'add', b, '--key', key, '--level', '1'])).code).toBe(0)
    const created = await muster(['nodes', 'join-token', 'create', '--max-uses', '1', '--name-pattern', 'm*'])
    const token = created.stdout.trim()
    const line = created.stderr.split('\n').map((l) => l.trim()).find((l) => l.startsWith('c=$(mktemp)'))!.replace('NAME', 'm1')

    machine = await Machine.boot(m1, { binds: [{ host: share, machine: '/opt/muster-test', readOnly: true }] })
    const m = machine
    process.stderr.write(`systemd upgrade: m1 booted in ${m.bootMs} ms\n`)
    // 1. the printed bootstrap line; then install.sh puts the older build in place (the unit restarts into it)
    const boot = await m.sh(line, { env: { MUSTER_ENROLLMENT_TOKEN: token }, timeoutMs: 240_000 })
    expect(boot.code).toBe(0)
    const reinstall = await m.run(['sh', '/opt/muster-test/install.sh', '--role', 'worker', '--binary', '/opt/muster-test/muster-old'], { timeoutMs: 120_000 })
    expect(reinstall.code).toBe(0)
    const unit = async () => {
      const r = await m.run(['systemctl', 'show', 'muster-agent.service', '-p', 'ActiveState,MainPID,NRestarts'])
      return Object.fromEntries(r.stdout.trim().split('\n').map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)])) as { ActiveState: string; MainPID: string; NRestarts: string }
    }
    const exe = async (pid: string) => (await m.run(['readlink', `/proc/${pid}/exe`])).stdout.trim()
    const node = async () => (await json<{ nodes: { name: string; state: string; version: string }[] }>(['nodes', 'list'])).nodes.find((n) => n.name === 'm1')
    await waitFor(async () => (await node())?.version === OLD && (await node())?.state === 'ready', { timeoutMs: 90_000, what: `m1 ready at ${OLD}` })
    const before = await unit()
    expect(before.ActiveState).toBe('active')
    expect(await exe(before.MainPID)).toBe('/usr/local/bin/muster')
    expect((await muster(['projects', 'deploy', 'web', '--replicas', '1', '--cpu', '10', '--memory', '32', '--', 'sh', '-c', 'exec sleep 3600'])).code).toBe(0)
    const replicaPid = async () => (await m.sh("pgrep -x sleep | head -1")).stdout.trim()
    const replica = await waitFor(async () => (await replicaPid()) || null, { timeoutMs: 60_000, what: 'the replica running' })

    // 2. the rollout: the unit's main process execs the new binary from the data directory; no restart
    const r = await json<{ id: string }>(['rollouts', 'start', VERSION])
    const done = await waitFor(async () => {
      const s = await json<{ state: string; nodes: { state: string; error: string | null }[] }>(['rollouts', 'status', r.id])
      return s.state === 'done' || s.state === 'halted' ? s : null
    }, { timeoutMs: 180_000, intervalMs: 500, what: 'the rollout finished' })
    expect(done.state).toBe('done')
    const after = await unit()
    expect(after).toMatchObject({ ActiveState: 'active', MainPID: before.MainPID, NRestarts: before.NRestarts })
    expect(await exe(after.MainPID)).toBe(`/var/lib/muster/versions/${VERSION}-2/muster`)
    expect(await replicaPid()).toBe(replica)
    await waitFor(async () => (await node())?.version === VERSION, { timeoutMs: 30_000, what: `m1 heartbeating at ${VERSION}` })
    const journal = (await m.run(['journalctl', '-u', 'muster-agent', '--no-pager', '-o', 'cat'])).stdout
    expect(journal).toContain(`update: ${VERSION} (sequence 2) passed its health check and is installed`)

    // 3. faulty releases: rolled back; systemd restarts the unit into the release that ran; the replica stays
    const faults: [string, 'exits-at-start' | 'never-heartbeats', RegExp][] = [
      ['0.0.10', 'exits-at-start', /exited during its health check|stopped during its health check/],
      ['0.0.11', 'never-heartbeats', /did not heartbeat at 0\.0\.11 within 15 s/],
    ]
    for (const [version, fault, reason] of faults) {
      const faulty = faultyBuild(fault, join(dir.path, 'faulty'))
      expect((await muster(['releases', 'add', faulty, '--key', key, '--version', version, '--arch', 'x64', '--level', '1'])).code).toBe(0)
      const restartsBefore = Number((await unit()).NRestarts)
      const f = await json<{ id: string }>(['rollouts', 'start', version, '--health-timeout', '15s'])
      const s = await waitFor(async () => {
        const st = await json<{ state: string; nodes: { state: string; error: string | null }[] }>(['rollouts', 'status', f.id])
        return st.state === 'halted' && st.nodes[0]!.state === 'rolled-back' ? st : null
      }, { timeoutMs: 120_000, intervalMs: 500, what: `${fault} rolled back` })
      expect(s.nodes[0]!.error).toMatch(reason)
      const u = await waitFor(async () => {
        const x = await unit()
        return x.ActiveState === 'active' && Number(x.NRestarts) > restartsBefore ? x : null
      }, { timeoutMs: 60_000, what: 'the unit restarted by systemd' })
      expect(await exe(u.MainPID)).toBe(`/var/lib/muster/versions/${VERSION}-2/muster`)
      expect(await replicaPid()).toBe(replica)
      await waitFor(async () => (await node())?.version === VERSION && (await node())?.state === 'ready', { timeoutMs: 60_000, what: `m1 back on ${VERSION}` })
      expect((await muster(['rollouts', 'cancel', f.id])).code).toBe(0)
    }
  })
})
