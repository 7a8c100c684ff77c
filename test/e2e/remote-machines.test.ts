// Machines across a network (docs/operations.md): a Platform host and
// two worker hosts, each a network namespace on 198.18.1.0/24. The Platform
// runs the documented `serve --host ADDR --enrollment-port 7443` (HTTPS from
// its CA on both ports); the operator logs in as docs/operations.md says and
// creates a join token; the printed `worker join` line runs on one host and the
// printed bootstrap line (curl and sh, with --root) on the other, twice. Then a
// project runs on both, a node is revoked, and after a Platform restart the
// other node heartbeats again.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { chmodSync, existsSync, mkdirSync, readFileSync, symlinkSync } from 'node:fs'
import { join } from 'node:path'
import { musterBin } from '../helpers/binary.ts'
import { describeWithNetns, Network, pidsOn, runOn, startOn, type Host, type Started } from '../helpers/netns.ts'
import { tmpDir, waitFor } from '../helpers/tmp.ts'

interface NodeRow {
  name: string
  state: string
  lastSeenAt: string | null
}

describeWithNetns('machines across a network', () => {
  let net: Network
  const dir = tmpDir('muster-fleet-')
  const started: Started[] = []
  beforeAll(() => {
    net = Network.create(['p', 'w1', 'w2'])
  })
  afterAll(async () => {
    for (const s of started.reverse()) await s.stop()
    net?.destroy()
    dir[Symbol.dispose]()
  })

  test('serve --host, the printed join and bootstrap lines, a project on both, revoke, restart', { timeout: 300_000 }, async () => {
    const bin = await musterBin()
    chmodSync(dir.path, 0o755) // the muster account of the bootstrapped root must reach its files
    const [p, w1, w2] = [net.host('p'), net.host('w1'), net.host('w2')]
    const data = join(dir.path, 'platform')
    // `muster` on PATH, as on a machine where it is installed
    mkdirSync(join(dir.path, 'bin'))
    symlinkSync(bin, join(dir.path, 'bin', 'muster'))
    const PATH = `${join(dir.path, 'bin')}:${process.env.PATH}`
    const operator = { XDG_CONFIG_HOME: join(dir.path, 'config'), PATH }
    const muster = (host: Host, args: string[], opts: { env?: Record<string, string>; stdin?: string } = {}) => runOn(host, [bin, ...args], { ...opts, env: { ...operator, ...opts.env } })
    const serveArgs = [bin, 'serve', '--data-dir', data, '--host', p.address, '--enrollment-port', '7443', '--no-local-node']
    const serveEnv = { MUSTER_PROBE_INTERVAL_MS: '500' }

    // 1. the Platform other machines join, in one command
    let serve = startOn(p, serveArgs, serveEnv)
    started.push(serve)
    expect((await serve.waitForLog(/muster Platform listening on (\S+)/))[1]).toBe(`https://${p.address}:7380`)
    await serve.waitForLog(/enrollment listener on https:\/\/198\.18\.1\.1:7443 .*bound on 198\.18\.1\.1, 127\.0\.0\.1\)/)

    // 2. the operator logs in on the Platform host with the CA file the Platform wrote, then makes a token
    const login = await muster(p, ['login', '--platform-url', `https://${p.address}:7380`, '--platform-ca-file', join(data, 'platform/ca.pem'), '--identifier', 'superadmin', '--password-file', join(data, 'platform/initial-superadmin-password')])
    expect(login.code).toBe(0)
    const created = await muster(p, ['nodes', 'join-token', 'create', '--max-uses', '2', '--name-pattern', 'w*'])
    expect(created.code).toBe(0)
    const token = created.stdout.trim()
    expect(token).toMatch(/^mjt_/) // stdout is the token alone; the lines follow on stderr
    const lines = created.stderr.split('\n').map((l) => l.trim())
    const bootstrapLine = lines.find((l) => l.startsWith('c=$(mktemp)'))!
    const joinLine = lines.find((l) => l.startsWith('muster worker join'))!
    expect(joinLine).toBe(`muster worker join --platform-url https://${p.address}:7443 --node-id NAME --platform-fingerprint ${JSON.parse((await muster(p, ['nodes', 'platform', '--json'])).stdout).enrollment.fingerprint}`)
    expect(bootstrapLine).toEndWith('| sh -s -- --node-id NAME')
    expect(bootstrapLine).not.toContain(token)
    expect(created.stderr).toContain('Replace NAME with the machine\'s name (matching w*)')
    const asJson = JSON.parse((await muster(p, ['nodes', 'join-token', 'create', '--json'])).stdout) as { joinCommand: string; bootstrapCommand: string }
    expect(asJson.joinCommand).toBe(joinLine)
    expect(asJson.bootstrapCommand).toBe(bootstrapLine)

    // 3. w1: the printed join line, where muster is installed; the token on stdin; then its Agent
    const w1Data = join(dir.path, 'w1')
    const joined = await runOn(w1, ['sh', '-c', `${joinLine.replace('NAME', 'w1')} --data-dir ${w1Data}`], { env: { PATH }, stdin: `${token}\n` })
    expect(joined.stderr + joined.stdout).toContain('Joined as w1')
    expect(joined.code).toBe(0)
    const w1Agent = startOn(w1, [bin, 'agent', '--data-dir', w1Data], { MUSTER_AGENT_HEARTBEAT_MS: '1000' })
    started.push(w1Agent)

    // 4. w2: the printed bootstrap line with only curl and sh, into a --root; the token from the environment
    const root = join(dir.path, 'w2-root')
    mkdirSync(root, { mode: 0o755 })
    const agentEnv = { MUSTER_AGENT_HEARTBEAT_MS: '1000' }
    const boot = await runOn(w2, ['sh', '-c', `${bootstrapLine.replace('NAME', 'w2')} --root ${root}`], { env: { ...agentEnv, MUSTER_ENROLLMENT_TOKEN: token }, timeoutMs: 120_000 })
    expect(boot.stderr).not.toContain(token)
    expect(boot.stdout).not.toContain(token)
    expect(boot.stdout).toContain('joined https://198.18.1.1:7443 as w2')
    expect(boot.code).toBe(0)
    const receipt = JSON.parse(readFileSync(join(root, 'etc/muster/receipt.json'), 'utf8')) as { role: string; uid: number }
    expect(receipt.role).toBe('worker')
    const agentPid = Number(readFileSync(join(root, 'var/lib/muster/agent.pid'), 'utf8'))
    expect(pidsOn(w2)).toContain(agentPid) // the Agent runs on w2, as the muster account
    expect(readFileSync(`/proc/${agentPid}/status`, 'utf8')).toMatch(new RegExp(`\\nUid:\\t${receipt.uid}\\t`))
    // running it again is harmless: nothing joins twice, the running Agent is left alone
    const again = await runOn(w2, ['sh', '-c', `${bootstrapLine.replace('NAME', 'w2')} --root ${root}`], { env: agentEnv, timeoutMs: 120_000 })
    expect(again.stdout).toContain('has already joined and its credential works; not joining again')
    expect(again.stdout).toContain(`the Agent already runs (pid ${agentPid})`)
    expect(again.code).toBe(0)

    // 5. both ready; a project runs on both hosts (a process in w2's namespace)
    const nodes = async () => (JSON.parse((await muster(p, ['nodes', 'list', '--json'])).stdout) as { nodes: NodeRow[] }).nodes
    await waitFor(async () => (await nodes()).filter((n) => n.state === 'ready').length === 2, { timeoutMs: 60_000, what: 'w1 and w2 ready' })
    const deployed = await muster(p, ['projects', 'deploy', 'web', '--replicas', '2', '--cpu', '10', '--memory', '8', '--', 'sh', '-c', 'exec sleep 3600'])
    expect(deployed.code).toBe(0)
    const placements = await waitFor(async () => {
      const show = JSON.parse((await muster(p, ['projects', 'show', 'web', '--json'])).stdout) as { placements?: { node: string; state: string }[] }
      return show.placements?.length === 2 && show.placements.every((x) => x.state === 'running') ? show.placements : null
    }, { timeoutMs: 60_000, what: 'web running on two nodes' })
    expect(placements.map((x) => x.node).sort()).toEqual(['w1', 'w2'])
    expect(pidsOn(w2).some((pid) => existsSync(`/proc/${pid}/cmdline`) && readFileSync(`/proc/${pid}/cmdline`, 'utf8').startsWith('sleep\0'))).toBe(true)

    // 6. revoke w1
    expect((await muster(p, ['nodes', 'revoke', 'w1'])).code).toBe(0)
    await waitFor(async () => (await nodes()).find((n) => n.name === 'w1')?.state === 'revoked', { timeoutMs: 30_000, what: 'w1 revoked' })
    // w1's Agent stops with status 3 (the unit does not restart it); doctor on w1 fails naming the way back (docs/operations.md)
    await waitFor(() => w1Agent.proc.exitCode !== null, { timeoutMs: 30_000, what: "w1's Agent to stop" })
    expect(w1Agent.proc.exitCode).toBe(3)
    expect(w1Agent.log()).toContain("the Platform refuses this node's credential for good: an operator revoked this node")
    const doctor = await runOn(w1, [bin, 'doctor', '--data-dir', w1Data, '--root', join(dir.path, 'no-receipt')], { env: { PATH } })
    expect(doctor.code).toBe(1)
    expect(doctor.stdout).toMatch(/fail\s+credential\s+the Platform refuses this node's credential for good: an operator revoked this node/)
    expect(doctor.stdout).toContain('`muster nodes rebind w1` prints a token')

    // 7. a Platform restart: w2 heartbeats again
    await serve.stop()
    const restartedAt = Date.now()
    serve = startOn(p, serveArgs, serveEnv)
    started.push(serve)
    await serve.waitForLog(/enrollment listener on https:\/\//)
    // The Agent's back-off is capped, so a node heartbeats within 10 s of its Platform's return (docs/operations.md).
    const HEARTBEAT_AGAIN_MS = 10_000
    await waitFor(async () => {
      const w = (await nodes()).find((n) => n.name === 'w2')
      return w?.state === 'ready' && Date.parse(w.lastSeenAt ?? '') > restartedAt
    }, { timeoutMs: HEARTBEAT_AGAIN_MS, what: 'w2 heartbeating after the restart' })

    // 8. rebound: the bootstrap line over the dead credential asks for the new token (here no terminal: it says how
    //    to give it), then with the token joins again and starts the Agent again
    const rebound = await muster(p, ['nodes', 'rebind', 'w2', '--json'])
    expect(rebound.code).toBe(0)
    const newToken = (JSON.parse(rebound.stdout) as { token: string }).token
    const line = `${bootstrapLine.replace('NAME', 'w2')} --root ${root}`
    const noToken = await runOn(w2, ['sh', '-c', line], { env: agentEnv, timeoutMs: 120_000 })
    expect(noToken.code).not.toBe(0)
    expect(noToken.stderr).toContain('give the new token with --enrollment-token-file FILE or MUSTER_ENROLLMENT_TOKEN')
    const rejoined = await runOn(w2, ['sh', '-c', line], { env: { ...agentEnv, MUSTER_ENROLLMENT_TOKEN: newToken }, timeoutMs: 120_000 })
    expect(rejoined.code).toBe(0)
    expect(rejoined.stdout).toContain('joined https://')
    await waitFor(async () => (await nodes()).find((n) => n.name === 'w2')?.state === 'ready', { timeoutMs: 60_000, what: 'w2 ready again after rebind' })
  })
})
