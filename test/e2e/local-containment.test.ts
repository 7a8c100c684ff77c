// The Platform's own node contains its replicas as an Agent does
// (docs/security.md, "The local node"), performed through dist/muster with
// `muster serve --local-node` run as root:
//  - a project there runs as a uid of its own, so it reads neither
//    platform/master.key, the store (muster.db) nor the API's TLS key, lists
//    no part of the data directory, cannot read another project's file or
//    environment, and cannot signal serve, its engine or another project;
//  - each replica is in a cgroup of its own with its --memory as the limit;
//  - a replica that calls setsid and double-forks dies with `projects
//    remove`, also after serve was killed -9 and its next engine adopted it,
//    and when serve stops;
//  - the control: `--local-run-as root` (only by that name) lets the same
//    attack read the master key, and doctor fails `local-node-isolation`;
//  - serve run by an account without root keeps working: its replicas run as
//    that account (it says so, and doctor fails), and --local-run-as needs root.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { chmodSync, chownSync, copyFileSync, existsSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { issueServerCert, generateCa } from '../../src/crypto/ca.ts'
import { DataDir } from '../../src/datadir.ts'
import { ProjectUids } from '../../src/replicas/uids.ts'
import { killServeHard, musterBin, runMuster, startServe } from '../helpers/binary.ts'
import { processesOf, runTag, sessionOf, sweepReplicas, uidOf } from '../helpers/replica-procs.ts'
import { describeAsRoot } from '../helpers/root.ts'
import { tmpDir, waitFor } from '../helpers/tmp.ts'

const tag = runTag()
const UID_FIRST = 1_879_048_192
// Leaves its process group twice over: a setsid'd child, and a grandchild whose parent exits at once.
const ESCAPE = 'setsid sh -c "exec sleep 3001" & sh -c "sleep 3002 & exit 0"; echo escaped; exec sleep 3600'

/** What a project tries against the Platform it runs beside; $D the data directory, $K the TLS key, $S serve, $A another project's shell. */
const ATTACK = [
  'echo "MASTER:$(od -An -tx1 "$D/platform/master.key" 2>/dev/null | tr -d " \\n" || true)"',
  'echo "STORE:$(head -c 15 "$D/muster.db" 2>/dev/null || true)"',
  'echo "LIST:$(ls "$D" "$D/platform" 2>/dev/null | tr "\\n" " " || true)"',
  'echo "TLSKEY:$(head -c 27 "$K" 2>/dev/null || true)"',
  'echo "ENVIRON:$(tr "\\000" " " < /proc/$A/environ 2>/dev/null || true)"',
  'echo "FILE:$(cat "$F" 2>/dev/null || true)"',
  'for p in $S $PPID $A; do if kill -0 $p 2>/dev/null; then echo "SIGNAL:$p:yes"; else echo "SIGNAL:$p:no"; fi; done',
  'echo "UID:$(id -u)"',
  'echo ATTACK-DONE; exec sleep 3600',
].join('; ')

type Serve = Awaited<ReturnType<typeof startServe>>

describeAsRoot('the local node contains its replicas', () => {
  const dir = tmpDir()
  const data = `${dir.path}/platform`
  const tls = { ca: `${dir.path}/tls/ca.pem`, cert: `${dir.path}/tls/api.pem`, key: `${dir.path}/tls/api.key` }
  const flags = ['--local-node', '--tls-cert', tls.cert, '--tls-key', tls.key]
  let serve: Serve
  let env: Record<string, string>
  const secretFile = `/tmp/alice-${tag}-secret`

  const open = async (dataDir: string, extra: string[]) => {
    const s = await startServe(dataDir, extra)
    const { token } = JSON.parse((await runMuster(['admin', 'api-token', '--data-dir', dataDir, '--json'])).stdout) as { token: string }
    return { serve: s, env: { MUSTER_URL: s.url, MUSTER_TOKEN: token, MUSTER_PLATFORM_CA_FILE: tls.ca } }
  }
  const cli = (args: string[], e = env) => runMuster(args, { env: e, timeoutMs: 60_000 })
  const logLines = (project: string, has: string, e = env) =>
    waitFor(async () => {
      const r = await cli(['projects', 'logs', project, '--replica', '0', '--json'], e)
      const lines = r.code === 0 ? (JSON.parse(r.stdout) as { lines: string[] }).lines : []
      return lines.some((l) => l.includes(has) && !l.includes(' starting revision ')) ? lines : null
    }, { timeoutMs: 60_000, what: `"${has}" in ${project}'s log` })
  const placed = (project: string, want = 1) => waitFor(() => (processesOf(project).length >= want ? processesOf(project) : null), { timeoutMs: 60_000, what: `${project}'s processes` })
  /** The cgroup v2 path of `pid` (/proc/PID/cgroup, line 0::). */
  const cgroupOf = (pid: number) => /^0::(.*)$/m.exec(readFileSync(`/proc/${pid}/cgroup`, 'utf8'))?.[1] ?? ''
  /** The memory limit written for `pid`'s cgroup: cgroup v2's memory.max, or on a hybrid host cgroup v1's. */
  const memoryLimitOf = (pid: number, via: string): number => {
    const cg = readFileSync(`/proc/${pid}/cgroup`, 'utf8')
    if (via === 'cgroup2') return Number(readFileSync(`/sys/fs/cgroup${existsSync('/sys/fs/cgroup/unified') ? '/unified' : ''}${cgroupOf(pid)}/memory.max`, 'utf8'))
    const v1 = /^\d+:memory:(.*)$/m.exec(cg)?.[1] ?? ''
    return Number(readFileSync(`/sys/fs/cgroup/memory${v1}/memory.limit_in_bytes`, 'utf8'))
  }
  const field = (lines: string[], k: string) => lines.find((l) => l.startsWith(`${k}:`))?.slice(k.length + 1) ?? ''

  beforeAll(async () => {
    sweepReplicas()
    chmodSync(dir.path, 0o711)
    mkdirSync(`${dir.path}/tls`, { mode: 0o755 })
    const ca = await generateCa(30)
    const leaf = await issueServerCert(ca, { commonName: 'api', dnsNames: ['localhost'], ipAddresses: ['127.0.0.1'], days: 30 })
    writeFileSync(tls.ca, ca.certPem)
    writeFileSync(tls.cert, leaf.certPem)
    // Only its mode keeps it from others: the folder is open.
    writeFileSync(tls.key, leaf.keyPem, { mode: 0o600 })
    ;({ serve, env } = await open(data, flags))
  })
  afterAll(async () => {
    await serve?.stop()
    sweepReplicas(tag)
    rmSync(secretFile, { force: true })
    dir[Symbol.dispose]()
  })

  test("a project on the local node reads no part of the Platform's data directory nor its TLS key, nor another project's files, and signals nothing", { timeout: 240_000 }, async () => {
    expect(serve.log()).toContain("local node: each project's replicas run as a uid of their own")
    const alice = `alice-${tag}`
    const mallory = `mallory-${tag}`
    expect((await cli(['projects', 'deploy', alice, '--replicas', '1', '--cpu', '10', '--memory', '32', '--env', 'ALICE_TOKEN=alice-s3cret', '--', 'sh', '-c', `echo alice-file-s3cret > ${secretFile}; while :; do sleep 1; done`, alice])).code).toBe(0)
    await placed(alice)
    const alicePid = await waitFor(() => processesOf(alice).find((pid) => readFileSync(`/proc/${pid}/cmdline`, 'latin1').endsWith(`${alice}\0`)), { what: "alice's shell" })
    await waitFor(() => existsSync(secretFile), { what: "alice's file" })
    const vars = { D: data, K: tls.key, S: String(serve.proc.pid), A: String(alicePid), F: secretFile }
    expect((await cli(['projects', 'deploy', mallory, '--replicas', '1', '--cpu', '10', '--memory', '32', ...Object.entries(vars).flatMap(([k, v]) => ['--env', `${k}=${v}`]), '--', 'sh', '-c', ATTACK])).code).toBe(0)
    const lines = await logLines(mallory, 'ATTACK-DONE')
    expect(field(lines, 'MASTER')).toBe('')
    expect(field(lines, 'STORE')).toBe('')
    expect(field(lines, 'LIST')).toBe('')
    expect(field(lines, 'TLSKEY')).toBe('')
    expect(field(lines, 'ENVIRON')).toBe('')
    expect(field(lines, 'FILE')).toBe('')
    expect(lines.join('\n')).not.toContain('s3cret')
    const [malloryPid] = await placed(mallory)
    const engine = Number(readFileSync(`/proc/${malloryPid}/stat`, 'latin1').split(') ')[1]!.split(' ')[1])
    expect(readFileSync(`/proc/${engine}/cmdline`, 'latin1')).toContain('serve') // $PPID is the Platform's engine
    expect(lines.filter((l) => l.startsWith('SIGNAL:')).sort()).toEqual([`SIGNAL:${alicePid}:no`, `SIGNAL:${engine}:no`, `SIGNAL:${serve.proc.pid}:no`].sort())
    // two uids of the range, neither root
    const [ua, um] = [uidOf(alicePid), uidOf(malloryPid!)]
    expect(ua).not.toBe(um)
    for (const u of [ua, um]) expect(u).toBeGreaterThanOrEqual(UID_FIRST)
    expect(field(lines, 'UID')).toBe(String(um))
    // from the local node's own slice, never the one an Agent on this very data directory takes
    const localFirst = (JSON.parse(readFileSync(`${data}/platform/local-node/isolation.json`, 'utf8')) as { uid: number }).uid
    const agentFirst = ProjectUids.open(new DataDir(data)).first
    expect(localFirst).not.toBe(agentFirst)
    for (const u of [ua, um]) expect(u >= localFirst && u < localFirst + 65536 && !(u >= agentFirst && u < agentFirst + 65536)).toBe(true)
    // its own cgroup, with its --memory as the limit
    const isolation = JSON.parse(readFileSync(`${data}/platform/local-node/isolation.json`, 'utf8')) as { containment: string; limits: string; cgroup: string }
    expect(isolation).toMatchObject({ containment: 'cgroup', limits: expect.stringMatching(/^cgroup[12]$/) })
    expect(cgroupOf(malloryPid!)).toMatch(new RegExp(`/${mallory}\\.0\\.\\d+\\.\\d+$`))
    expect(memoryLimitOf(malloryPid!, isolation.limits)).toBe(32 * 1048576)
    expect(processesOf(alice)).toContain(alicePid) // still alive
    const doctor = JSON.parse((await runMuster(['doctor', '--data-dir', data, '--json'])).stdout) as { checks: { name: string; status: string; message: string }[] }
    expect(doctor.checks.find((c) => c.name === 'local-node-isolation')).toMatchObject({ status: 'ok', message: expect.stringContaining('a uid of its own') })
    for (const p of [alice, mallory]) expect((await cli(['projects', 'remove', p])).code).toBe(0)
    await waitFor(() => processesOf(alice).length + processesOf(mallory).length === 0, { timeoutMs: 30_000, what: 'both projects stopped' })
  })

  test('a replica that calls setsid and double-forks dies with `projects remove`, also after serve was killed -9 and adopted it, and with serve\'s stop', { timeout: 240_000 }, async () => {
    const base = (JSON.parse(readFileSync(`${data}/platform/local-node/isolation.json`, 'utf8')) as { cgroup: string }).cgroup
    const cgroupsOf = (project: string) => (existsSync(base) ? readdirSync(base).filter((n) => n.startsWith(`${project}.`)) : [])
    const escaped = (project: string) =>
      waitFor(() => {
        const pids = processesOf(project).filter((pid) => /^sleep\x00(300[12]|3600)\x00/.test(readFileSync(`/proc/${pid}/cmdline`, 'latin1')))
        return pids.length === 3 && new Set(pids.map(sessionOf)).size > 1 ? pids : null
      }, { timeoutMs: 60_000, what: `${project}'s escaped processes` })
    const a = `escape-${tag}`
    expect((await cli(['projects', 'deploy', a, '--replicas', '1', '--cpu', '10', '--memory', '32', '--', 'sh', '-c', ESCAPE])).code).toBe(0)
    for (const pid of await escaped(a)) expect(cgroupOf(pid)).toMatch(new RegExp(`/${a}\\.0\\.\\d+\\.\\d+$`))
    expect((await cli(['projects', 'remove', a])).code).toBe(0)
    await waitFor(() => processesOf(a).length === 0, { timeoutMs: 30_000, what: `every process of ${a} gone after projects remove (left: ${processesOf(a).join(' ')})` })
    await waitFor(() => cgroupsOf(a).length === 0, { timeoutMs: 10_000, what: `${a}'s cgroup removed` })

    // The same escape; serve dies hard; the next engine adopts the replica with its cgroup; then remove.
    const b = `escape2-${tag}`
    expect((await cli(['projects', 'deploy', b, '--replicas', '1', '--cpu', '10', '--memory', '32', '--', 'sh', '-c', ESCAPE])).code).toBe(0)
    const running = await escaped(b)
    await killServeHard(serve)
    expect(processesOf(b).sort()).toEqual(running.sort())
    ;({ serve, env } = await open(data, flags))
    await serve.waitForLog(new RegExp(`replica ${b}/0 \\(pid \\d+\\) is still running: adopted with its cgroup`))
    expect((await cli(['projects', 'remove', b])).code).toBe(0)
    await waitFor(() => processesOf(b).length === 0, { timeoutMs: 30_000, what: `every process of ${b} gone after projects remove (left: ${processesOf(b).join(' ')})` })
    await waitFor(() => cgroupsOf(b).length === 0, { timeoutMs: 10_000, what: `${b}'s cgroup, found through the record, removed` })

    // Stopping serve stops its node's replicas: the escaped processes too.
    const c = `escape3-${tag}`
    expect((await cli(['projects', 'deploy', c, '--replicas', '1', '--cpu', '10', '--memory', '32', '--', 'sh', '-c', ESCAPE])).code).toBe(0)
    await escaped(c)
    expect(await serve.stop()).toBe(0)
    await waitFor(() => processesOf(c).length === 0, { timeoutMs: 30_000, what: `every process of ${c} gone after serve stopped (left: ${processesOf(c).join(' ')})` })
    expect(cgroupsOf(c)).toEqual([])
  })

  test('the control: with --local-run-as root the same attack reads the master key, and doctor fails; other accounts are refused by name', { timeout: 120_000 }, async () => {
    const rootData = `${dir.path}/as-root`
    const refused = await runMuster(['serve', '--data-dir', rootData, '--port', '0', '--local-node', '--local-run-as', 'no-such-account-here'], { timeoutMs: 30_000 })
    expect(refused.code).not.toBe(0)
    expect(refused.stderr).toContain('--local-run-as no-such-account-here: no such account on this machine')
    const zero = await runMuster(['serve', '--data-dir', rootData, '--port', '0', '--local-node', '--local-run-as', '0:0'], { timeoutMs: 30_000 })
    expect(zero.stderr).toContain('--local-run-as 0:0: that is root; to run replicas as root, say --local-run-as root.')
    const lonely = await runMuster(['serve', '--data-dir', rootData, '--port', '0', '--local-run-as', 'root'], { timeoutMs: 30_000 })
    expect(lonely.stderr).toContain('give --local-node too')

    const opened = await open(rootData, [...flags, '--local-run-as', 'root'])
    try {
      expect(opened.serve.log()).toContain("local node: replicas run as root and can read the Platform's master key and store")
      const p = `asroot-${tag}`
      expect((await cli(['projects', 'deploy', p, '--replicas', '1', '--cpu', '10', '--memory', '32', '--env', `D=${rootData}`, '--env', `K=${tls.key}`, '--env', `S=${opened.serve.proc.pid}`, '--env', 'A=1', '--env', `F=${secretFile}`, '--', 'sh', '-c', ATTACK], opened.env)).code).toBe(0)
      const lines = await logLines(p, 'ATTACK-DONE', opened.env)
      expect(field(lines, 'MASTER')).toBe(readFileSync(`${rootData}/platform/master.key`).toString('hex'))
      expect(field(lines, 'TLSKEY')).toBe('-----BEGIN PRIVATE KEY-----')
      expect(field(lines, 'UID')).toBe('0')
      const doctor = JSON.parse((await runMuster(['doctor', '--data-dir', rootData, '--json'])).stdout) as { checks: { name: string; status: string; message: string }[] }
      expect(doctor.checks.find((c) => c.name === 'local-node-isolation')).toMatchObject({ status: 'fail', message: expect.stringContaining('--local-run-as root') })
      expect((await cli(['projects', 'remove', p], opened.env)).code).toBe(0)
    } finally {
      await opened.serve.stop()
    }
  })

  test('serve as an account without root: the local node runs replicas as that account and says so; --local-run-as needs root', { timeout: 120_000 }, async () => {
    // The binary, the data directory and HOME where `nobody` reaches them; every command as nobody, without capabilities.
    const home = `${dir.path}/nobody`
    mkdirSync(home, { mode: 0o700 })
    chownSync(home, 65534, 65534)
    const bin = `${dir.path}/muster`
    copyFileSync(await musterBin(), bin)
    chmodSync(bin, 0o755)
    const asNobody = `${dir.path}/muster-as-nobody`
    writeFileSync(asNobody, `#!/bin/sh\nexec setpriv --reuid=65534 --regid=65534 --clear-groups ${bin} "$@"\n`, { mode: 0o755 })
    const data = `${home}/platform`
    const nobodyEnv = { HOME: home }
    const refused = await runMuster(['serve', '--data-dir', data, '--port', '0', '--local-node', '--local-run-as', 'root'], { env: nobodyEnv, bin: asNobody, timeoutMs: 30_000 })
    expect(refused.code).not.toBe(0)
    expect(refused.stderr).toContain('--local-run-as root needs a Platform running as root or with CAP_SETUID, CAP_SETGID and CAP_KILL')
    const s = await startServe(data, ['--local-node'], nobodyEnv, asNobody)
    try {
      expect(s.log()).toContain("local node: replicas run as nobody, the Platform's own user, and can read the Platform's master key and store")
      const tok = await runMuster(['admin', 'api-token', '--data-dir', data, '--json'], { env: nobodyEnv, bin: asNobody })
      expect(tok.code).toBe(0)
      const e = { MUSTER_URL: s.url, MUSTER_TOKEN: (JSON.parse(tok.stdout) as { token: string }).token }
      const p = `plain-${tag}`
      expect((await cli(['projects', 'deploy', p, '--replicas', '1', '--cpu', '10', '--memory', '32', '--', 'sh', '-c', 'echo "UID:$(id -u)"; echo RAN; exec sleep 3600'], e)).code).toBe(0)
      const lines = await logLines(p, 'RAN', e)
      expect(field(lines, 'UID')).toBe('65534')
      const [pid] = await placed(p)
      expect(uidOf(pid!)).toBe(65534)
      const doctor = JSON.parse((await runMuster(['doctor', '--data-dir', data, '--json'], { env: nobodyEnv, bin: asNobody })).stdout) as { checks: { name: string; status: string; message: string }[] }
      expect(doctor.checks.find((c) => c.name === 'local-node-isolation')).toMatchObject({ status: 'fail', message: expect.stringContaining('replicas run as nobody') })
      expect((await cli(['projects', 'remove', p], e)).code).toBe(0)
      await waitFor(() => processesOf(p).length === 0, { timeoutMs: 30_000, what: `${p} stopped by projects remove` })
    } finally {
      await s.stop()
    }
  })
})
