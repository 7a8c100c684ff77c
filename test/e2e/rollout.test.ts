// A rollout across machines (docs/upgrading.md), through dist/muster: a
// Platform host and six worker hosts, each a network namespace. The operator
// makes a release key, adds two real builds of this tree (an older version,
// then dist/muster), and rolls the new one out with canaries and
// --max-unavailable 1 while a sampler on the Platform host reads the rollout
// every 100 ms: the canaries (one per label group) finish before any other
// node is told, never more than one node is between told and done, a pause
// holds it, and afterwards every Agent is the same process as before, at the
// new version, with its replicas' PIDs unchanged.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { chmodSync, existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { procStat } from '../../src/replicas/procs.ts'
import { VERSION } from '../../src/version.ts'
import { musterBin } from '../helpers/binary.ts'
import { buildWithVersion } from '../helpers/builds.ts'
import { describeWithNetns, Network, runOn, startOn, type Host, type Started } from '../helpers/netns.ts'
import { tmpDir, waitFor } from '../helpers/tmp.ts'

const OLD = '0.0.9'
const WORKERS = ['w1', 'w2', 'w3', 'w4', 'w5', 'w6']

// Reads the rollout every 100 ms from the Platform's host and appends each answer as a JSON line.
const SAMPLER = `
const [url, token, ca, out] = process.argv.slice(2)
const { appendFileSync, readFileSync } = await import('node:fs')
const pem = readFileSync(ca, 'utf8')
for (;;) {
  const at = Date.now()
  try {
    const r = await fetch(url + '/api/v1/rollouts/latest', { headers: { authorization: 'Bearer ' + token }, tls: { ca: pem } })
    if (r.status === 200) appendFileSync(out, JSON.stringify({ at, rollout: await r.json() }) + '\\n')
  } catch {}
  await Bun.sleep(Math.max(0, 100 - (Date.now() - at)))
}
`

interface Sample {
  at: number
  rollout: { id: string; state: string; nodes: { name: string; state: string; canary: boolean }[] }
}

describeWithNetns('a rollout across machines', () => {
  let net: Network
  const dir = tmpDir('muster-rollout-e2e-')
  const started: Started[] = []
  beforeAll(() => {
    net = Network.create(['p', ...WORKERS], 3)
  })
  afterAll(async () => {
    for (const s of started.reverse()) await s.stop()
    net?.destroy()
    dir[Symbol.dispose]()
  })

  test('canaries, then one node at a time (sampled every 100 ms), a pause, the same Agents and replicas at the new version', { timeout: 400_000 }, async () => {
    const bin = await musterBin()
    const old = await buildWithVersion(OLD)
    chmodSync(dir.path, 0o755)
    const p = net.host('p')
    const data = join(dir.path, 'platform')
    mkdirSync(join(dir.path, 'bin'))
    symlinkSync(bin, join(dir.path, 'bin', 'muster'))
    const operator = { XDG_CONFIG_HOME: join(dir.path, 'config'), PATH: `${join(dir.path, 'bin')}:${process.env.PATH}` }
    const muster = (args: string[], host: Host = p) => runOn(host, [bin, ...args], { env: operator, timeoutMs: 120_000 })
    const json = async <T>(args: string[]): Promise<T> => {
      const r = await muster([...args, '--json'])
      if (r.code !== 0) throw new Error(`muster ${args.join(' ')}: ${r.stderr}`)
      return JSON.parse(r.stdout) as T
    }
    const serve = startOn(p, [bin, 'serve', '--data-dir', data, '--host', p.address, '--enrollment-port', '7443', '--no-local-node'], { MUSTER_PROBE_INTERVAL_MS: '500', MUSTER_ROLLOUT_TICK_MS: '200' })
    started.push(serve)
    await serve.waitForLog(/enrollment listener on https:\/\//)
    expect((await muster(['login', '--platform-url', `https://${p.address}:7380`, '--platform-ca-file', join(data, 'platform/ca.pem'), '--identifier', 'superadmin', '--password-file', join(data, 'platform/initial-superadmin-password')])).code).toBe(0)

    // 1. a release key, and two real builds released with it
    const keyFile = join(dir.path, 'release.key')
    const keygen = await muster(['releases', 'keygen', '--out', keyFile])
    expect(keygen.code).toBe(0)
    const kid = /^release key ([0-9a-f]{16}): /.exec(keygen.stdout)![1]!
    expect(readFileSync(keyFile, 'utf8')).toContain(kid)
    expect((Bun.spawnSync(['stat', '-c', '%a', keyFile]).stdout.toString().trim())).toBe('600')
    expect((await muster(['releases', 'keygen', '--out', keyFile])).code).toBe(2) // never overwritten
    for (const b of [old, bin]) {
      const added = await muster(['releases', 'add', b, '--key', keyFile, '--level', '1'])
      expect(added.stderr).toContain(`signed with release key ${kid}`)
      expect(added.code).toBe(0)
    }
    const list = await json<{ releases: { version: string; sequence: number; arch: string; sha256: string; size: number }[] }>(['releases', 'list'])
    expect(list.releases.map((r) => [r.version, r.sequence, r.arch])).toEqual([[OLD, 1, 'x64'], [VERSION, 2, 'x64']])
    expect(list.releases[1]!.size).toBe(readFileSync(bin).byteLength)
    // a second key, endorsed by the first (the only way nodes take another key)
    const second = join(dir.path, 'second.key')
    expect((await muster(['releases', 'keygen', '--out', second])).code).toBe(0)
    expect((await muster(['releases', 'endorse-key', second, '--key', keyFile])).code).toBe(0)
    const keys = (await json<{ keys: { kid: string; endorsedBy: string | null }[] }>(['releases', 'list'])).keys
    expect(keys.map((k) => k.endorsedBy)).toEqual([null, kid])

    // 2. six workers join with the older build (zone=a and zone=b), a replica on each
    const created = await muster(['nodes', 'join-token', 'create', '--max-uses', '6', '--name-pattern', 'w*'])
    const token = created.stdout.trim()
    const joinLine = created.stderr.split('\n').map((l) => l.trim()).find((l) => l.startsWith('muster worker join'))!
    const agents = new Map<string, Started>()
    for (const [i, name] of WORKERS.entries()) {
      const w = net.host(name)
      const d = join(dir.path, name)
      const line = `${joinLine.replace('NAME', name).replace(/^muster /, `${old} `)} --data-dir ${d} --label zone=${i < 3 ? 'a' : 'b'}`
      const joined = await runOn(w, ['sh', '-c', line], { stdin: `${token}\n` })
      expect(joined.code).toBe(0)
      const a = startOn(w, [old, 'agent', '--data-dir', d], { MUSTER_AGENT_HEARTBEAT_MS: '500' })
      started.push(a)
      agents.set(name, a)
    }
    const nodes = async () => (await json<{ nodes: { name: string; state: string; version: string }[] }>(['nodes', 'list'])).nodes
    await waitFor(async () => (await nodes()).filter((n) => n.state === 'ready').length === 6, { timeoutMs: 90_000, what: 'six workers ready' })
    expect((await muster(['projects', 'deploy', 'web', '--replicas', '6', '--cpu', '10', '--memory', '8', '--', 'sh', '-c', 'exec sleep 3600'])).code).toBe(0)
    const agentPid = (name: string) => (JSON.parse(readFileSync(join(dir.path, name, 'worker', 'agent.pid'), 'utf8')) as { pid: number }).pid
    const replicas = (name: string) => {
      const file = join(dir.path, name, 'worker', 'replicas.json')
      if (!existsSync(file)) return []
      return (JSON.parse(readFileSync(file, 'utf8')) as { replicas: { project: string; replica: number; pid: number; startTime: string }[] }).replicas.filter((r) => procStat(r.pid)?.startTime === r.startTime).map((r) => `${r.project}/${r.replica}:${r.pid}:${r.startTime}`).sort()
    }
    await waitFor(() => WORKERS.reduce((n, w) => n + replicas(w).length, 0) === 6, { timeoutMs: 60_000, what: 'six replicas running' })
    const before = new Map(WORKERS.map((w) => [w, { pid: agentPid(w), start: procStat(agentPid(w))!.startTime, replicas: replicas(w) }]))

    // 3. the sampler on the Platform host, then the rollout
    const samplerFile = join(dir.path, 'sampler.ts')
    const samples = join(dir.path, 'samples.jsonl')
    writeFileSync(samplerFile, SAMPLER)
    const apiToken = (JSON.parse(readFileSync(join(dir.path, 'config', 'muster', 'credentials.json'), 'utf8')) as { token: string }).token
    const sampler = startOn(p, [process.execPath, samplerFile, `https://${p.address}:7380`, apiToken, join(data, 'platform/ca.pem'), samples])
    started.push(sampler)
    const startedRollout = await json<{ id: string; version: string; state: string; nodes: { name: string; state: string }[] }>(['rollouts', 'start', VERSION, '--max-unavailable', '1'])
    expect(startedRollout).toMatchObject({ version: VERSION, state: 'running' })
    const id = startedRollout.id
    const status = () => json<{ id: string; state: string; reason: string | null; nodes: { name: string; state: string; from: string | null; to: string | null; error: string | null }[] }>(['rollouts', 'status', id])
    // a pause once the canaries are done: nobody else is told while it holds
    await waitFor(async () => (await status()).nodes.filter((n) => n.state === 'done').length >= 2, { timeoutMs: 120_000, intervalMs: 200, what: 'the canaries done' })
    expect((await muster(['rollouts', 'pause', id])).code).toBe(0)
    await waitFor(async () => (await status()).nodes.every((n) => ['done', 'pending'].includes(n.state)), { timeoutMs: 60_000, what: 'what was under way finished' })
    const paused = (await status()).nodes.filter((n) => n.state === 'done').length
    await Bun.sleep(1500) // the pause must hold for a while: nothing to wait for but time
    expect((await status()).nodes.filter((n) => n.state !== 'pending').length).toBe(paused)
    expect((await status()).state).toBe('paused')
    expect((await muster(['rollouts', 'resume', id])).code).toBe(0)
    const done = await waitFor(async () => {
      const s = await status()
      return s.state === 'done' ? s : null
    }, { timeoutMs: 240_000, intervalMs: 250, what: 'the rollout done' })
    // in the order of the plan: the canaries (the first of each zone), then the rest by name
    expect(done.nodes.map((n) => [n.name, n.state, n.from, n.to])).toEqual(['w1', 'w4', 'w2', 'w3', 'w5', 'w6'].map((w) => [w, 'done', OLD, VERSION]))
    await sampler.stop()

    // 4. what the sampler saw: at most one node between told and done; the canaries (w1, w4) before anyone else
    const seen = readFileSync(samples, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Sample).filter((s) => s.rollout.id === id)
    expect(seen.length).toBeGreaterThan(50)
    const gaps = seen.slice(1).map((s, i) => s.at - seen[i]!.at)
    expect(Math.max(...gaps)).toBeLessThan(1000)
    for (const s of seen) {
      const inFlight = s.rollout.nodes.filter((n) => ['downloading', 'installing', 'restarting'].includes(n.state))
      expect(inFlight.length).toBeLessThanOrEqual(1)
      // a node other than a canary is told only once every canary is done
      if (s.rollout.nodes.some((n) => !n.canary && n.state !== 'pending')) expect(s.rollout.nodes.filter((n) => n.canary).every((n) => n.state === 'done')).toBe(true)
    }
    expect(seen[0]!.rollout.nodes.filter((n) => n.canary).map((n) => n.name).sort()).toEqual(['w1', 'w4'])
    expect(seen.some((s) => s.rollout.nodes.some((n) => !n.canary && n.state !== 'pending'))).toBe(true)
    expect(seen.some((s) => s.rollout.nodes.some((n) => n.state === 'restarting'))).toBe(true)

    // 5. every Agent is the same process, at the new version, its replicas untouched
    for (const w of WORKERS) {
      const b = before.get(w)!
      expect(agentPid(w)).toBe(b.pid)
      expect(procStat(b.pid)!.startTime).toBe(b.start)
      expect(replicas(w)).toEqual(b.replicas)
      expect(agents.get(w)!.proc.exitCode).toBeNull()
    }
    await waitFor(async () => (await nodes()).every((n) => n.version === VERSION && n.state === 'ready'), { timeoutMs: 30_000, what: 'every node heartbeating at the new version' })
    const history = await json<{ rollouts: { id: string; state: string }[] }>(['rollouts', 'list'])
    expect(history.rollouts[0]).toMatchObject({ id, state: 'done' })
    const cancel = await muster(['rollouts', 'cancel', id])
    expect(cancel.code).toBe(1)
    expect(cancel.stderr).toContain(`Rollout ${id} is done: it cannot be cancelled.`)
    // the steps are in the audit
    const audit = (await json<{ entries: { action: string; target: string | null }[] }>(['audit', '--action', 'rollout'])).entries
    expect(audit.filter((e) => e.action === 'rollout.node.done').map((e) => e.target).sort()).toEqual(WORKERS)
    expect(audit.some((e) => e.action === 'rollout.pause')).toBe(true)
  })
})
