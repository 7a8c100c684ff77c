// The bootstrap line on a machine without systemd (a container, OpenRC, WSL):
// a namespace host, the printed line with --root (test/e2e/remote-machines.test.ts
// does the same; the systemd one is test/e2e/systemd-machines.test.ts). The
// Agent it starts in the background runs as the muster account with what the
// unit would grant — ambient CAP_SETUID, CAP_SETGID and CAP_KILL, nothing else —
// in a cgroup v2 subtree handed to that account, so each project runs as a
// uid of its own in its own cgroup: a project that goes for the node's key
// (found from the Agent's public command line) reads nothing, and doctor is
// content. (Before, the Agent had no capability and every replica ran as the
// muster account, reading agent.key and node-credential.)
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { chmodSync, existsSync, mkdirSync, readFileSync, symlinkSync } from 'node:fs'
import { join } from 'node:path'
import { musterBin } from '../helpers/binary.ts'
import { describeWithNetns, Network, runOn, startOn, type Started } from '../helpers/netns.ts'
import { tmpDir, waitFor } from '../helpers/tmp.ts'

const CAP_KILL = 5
const CAP_SETGID = 6
const CAP_SETUID = 7

const ATTACK = [
  'D=$(tr "\\000" "\\n" < /proc/$PPID/cmdline | sed -n "/^--data-dir$/{n;p;}")',
  'echo "DATADIR:$D"',
  'echo "KEY:$(cat "$D/worker/agent.key" 2>/dev/null | head -c 60 || true)"',
  'echo "CRED:$(cat "$D/worker/node-credential" 2>/dev/null || true)"',
  'echo "UID:$(id -u)"',
  'grep -E "^Cap(Prm|Eff|Amb):" /proc/self/status | tr "\\t" " "',
  'echo ATTACK-DONE; exec sleep 600',
].join('; ')

describeWithNetns('the bootstrap line without systemd', () => {
  let net: Network
  const dir = tmpDir('muster-bootnosd-')
  const started: Started[] = []
  beforeAll(() => {
    net = Network.create(['p', 'w'], 6)
  })
  afterAll(async () => {
    for (const s of started.reverse()) await s.stop()
    net?.destroy()
    dir[Symbol.dispose]()
  })

  test('the Agent gets the unit\'s capabilities and a cgroup of its own; a project reads nothing of the node', { timeout: 300_000 }, async () => {
    const bin = await musterBin()
    chmodSync(dir.path, 0o755)
    const p = net.host('p')
    // Through nsenter --net, not ip netns exec: that one mounts a fresh /sys, without the cgroup tree.
    const w = { ...net.host('w'), argv: (cmd: string[]) => ['nsenter', `--net=/run/netns/${net.host('w').ns}`, ...cmd] }
    const data = join(dir.path, 'platform')
    mkdirSync(join(dir.path, 'bin'))
    symlinkSync(bin, join(dir.path, 'bin', 'muster'))
    const operator = { XDG_CONFIG_HOME: join(dir.path, 'config'), PATH: `${join(dir.path, 'bin')}:${process.env.PATH}` }
    const muster = (args: string[]) => runOn(p, [bin, ...args], { env: operator })
    const serve = startOn(p, [bin, 'serve', '--data-dir', data, '--host', p.address, '--enrollment-port', '7443', '--no-local-node'], { MUSTER_PROBE_INTERVAL_MS: '500' })
    started.push(serve)
    await serve.waitForLog(/enrollment listener on https:\/\//)
    expect((await muster(['login', '--platform-url', `https://${p.address}:7380`, '--platform-ca-file', join(data, 'platform/ca.pem'), '--identifier', 'superadmin', '--password-file', join(data, 'platform/initial-superadmin-password')])).code).toBe(0)
    const created = await muster(['nodes', 'join-token', 'create', '--max-uses', '1', '--name-pattern', 'w*'])
    const token = created.stdout.trim()
    const line = created.stderr.split('\n').map((l) => l.trim()).find((l) => l.startsWith('c=$(mktemp)'))!.replace('NAME', 'w1')
    const root = join(dir.path, 'w-root')
    mkdirSync(root, { mode: 0o755 })
    const boot = await runOn(w, ['sh', '-c', `${line} --root ${root}`], { env: { MUSTER_AGENT_HEARTBEAT_MS: '1000', MUSTER_ENROLLMENT_TOKEN: token }, timeoutMs: 120_000 })
    expect(boot.stderr).not.toContain('can read this node')
    expect(boot.stdout).toContain('the Agent runs as the muster account with CAP_SETUID, CAP_SETGID and CAP_KILL in the cgroup muster-agent-')
    expect(boot.code).toBe(0)

    // the Agent: the muster account, exactly the three capabilities, in its leaf of the delegated subtree
    const receipt = JSON.parse(readFileSync(join(root, 'etc/muster/receipt.json'), 'utf8')) as { uid: number }
    const agentPid = Number(readFileSync(join(root, 'var/lib/muster/agent.pid'), 'utf8'))
    const status = readFileSync(`/proc/${agentPid}/status`, 'utf8')
    expect(status).toMatch(new RegExp(`\\nUid:\\t${receipt.uid}\\t${receipt.uid}\\t`))
    const want = (1n << BigInt(CAP_KILL)) | (1n << BigInt(CAP_SETGID)) | (1n << BigInt(CAP_SETUID))
    const cap = (k: string) => BigInt(`0x${/^Cap(\w+):\s+([0-9a-f]+)$/m.exec(status.split('\n').find((l) => l.startsWith(`Cap${k}:`))!)![2]}`)
    expect(cap('Eff')).toBe(want)
    expect(cap('Bnd')).toBe(want)
    await waitFor(() => /^0::\/muster-agent-[0-9a-f]{12}\/agent$/m.test(readFileSync(`/proc/${agentPid}/cgroup`, 'utf8')), { timeoutMs: 10_000, what: 'the Agent in its cgroup leaf' })
    const iso = JSON.parse(readFileSync(join(root, 'var/lib/muster/worker/isolation.json'), 'utf8')) as { isolated: boolean; user: string; containment: string }
    expect(iso).toMatchObject({ isolated: true, user: 'per-project', containment: 'cgroup' })

    // a project goes for the node's key
    await waitFor(async () => (JSON.parse((await muster(['nodes', 'list', '--json'])).stdout) as { nodes: { state: string }[] }).nodes.some((n) => n.state === 'ready'), { timeoutMs: 60_000, what: 'w1 ready' })
    expect((await muster(['projects', 'deploy', 'grab', '--replicas', '1', '--cpu', '10', '--memory', '32', '--', 'sh', '-c', ATTACK])).code).toBe(0)
    const lines = await waitFor(async () => {
      const r = await muster(['projects', 'logs', 'grab', '--replica', '0', '--json'])
      const l = r.code === 0 ? (JSON.parse(r.stdout) as { lines: string[] }).lines : []
      return l.includes('ATTACK-DONE') ? l : null
    }, { timeoutMs: 90_000, what: "the project's report" })
    const field = (k: string) => lines.find((l) => l.startsWith(`${k}:`))?.slice(k.length + 1) ?? ''
    expect(field('DATADIR')).toBe(join(root, 'var/lib/muster'))
    expect(field('KEY')).toBe('')
    expect(field('CRED')).toBe('')
    expect(Number(field('UID'))).toBeGreaterThanOrEqual(1_879_048_192)
    for (const set of ['CapPrm', 'CapEff', 'CapAmb']) expect(lines.find((l) => l.startsWith(`${set}:`))).toBe(`${set}: 0000000000000000`)
    const doctor = JSON.parse((await runOn(w, [bin, 'doctor', '--data-dir', join(root, 'var/lib/muster'), '--root', root, '--json'])).stdout) as { checks: { name: string; status: string; message: string }[] }
    expect(doctor.checks.find((c) => c.name === 'replica-isolation')).toMatchObject({ status: 'ok' })
    // stopped, then uninstalled: the cgroup the line made goes too
    const cg = /^0::(\/muster-agent-[0-9a-f]{12})\/agent$/m.exec(readFileSync(`/proc/${agentPid}/cgroup`, 'utf8'))![1]!
    expect((await runOn(w, [bin, 'agent', '--stop-replicas', '--data-dir', join(root, 'var/lib/muster')])).code).toBe(0)
    const un = await runOn(w, ['sh', join(import.meta.dir, '../../install.sh'), '--uninstall', '--purge', '--root', root])
    expect(un.code).toBe(0)
    expect(existsSync(`/sys/fs/cgroup/unified${cg}`) || existsSync(`/sys/fs/cgroup${cg}`)).toBe(false)
  })
})
