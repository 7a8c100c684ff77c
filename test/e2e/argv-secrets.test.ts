// Secrets given as flags leave the process's command line at once
// (docs/security.md, "Secrets never on argv"), through dist/muster: a poller
// as `nobody` reading /proc/PID/cmdline during `worker join --enrollment-token
// mjt_…` took a fleet token and enrolled a rogue node (the token sat there for
// the whole join, ~340 ms). Now the CLI overwrites it in its own argv before
// anything else loads and warns where the token belongs. What is left is the
// runtime's own start-up, before any of muster's code runs; from the first
// byte the command sends over the network to its exit, the poller never sees it.
import { describe, expect, test } from 'bun:test'
import { connect, createServer, type AddressInfo, type Socket } from 'node:net'
import { musterBin, runMuster, startServeWithListener } from '../helpers/binary.ts'
import { tmpDir } from '../helpers/tmp.ts'

const isRoot = process.getuid?.() === 0

/** Reads /proc/PID/cmdline as fast as it can, as `nobody` when this test runs as root; prints the wall-clock ms of every read that shows the needle. */
const POLLER = `use Time::HiRes qw(time); $| = 1; my ($pid, $needle) = ($ARGV[0], $ENV{NEEDLE});
my $reads = 0;
while (1) { open(my $f, '<', "/proc/$pid/cmdline") or last; local $/; my $c = <$f>; close $f; last if !defined $c || $c eq ''; $reads++; printf("%.3f\\n", time * 1000) if index($c, $needle) >= 0; }
print "end $reads\\n";`

/** A TCP relay in front of `target` that notes when the first connection came in (what the command sends first). */
async function relay(target: { host: string; port: number }) {
  let first: number | undefined
  const sockets = new Set<Socket>()
  const server = createServer((client) => {
    first ??= Date.now()
    const peer = connect(target.port, target.host)
    for (const s of [client, peer]) {
      sockets.add(s)
      s.on('error', () => s.destroy())
      s.on('close', () => sockets.delete(s))
    }
    client.pipe(peer).pipe(client)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `127.0.0.1:${port}`,
    firstConnection: () => first,
    [Symbol.dispose]: () => {
      for (const s of sockets) s.destroy()
      server.close()
    },
  }
}

/** Runs `muster ARGS` with a poller on its command line; when the relay saw the first connection, and when the poller saw `needle`. */
async function watched(args: string[], needle: string, firstConnection: () => number | undefined, env: Record<string, string> = {}) {
  const started = Date.now()
  const proc = Bun.spawn([await musterBin(), ...args], { env: { ...process.env, NO_COLOR: '1', ...env }, stdout: 'pipe', stderr: 'pipe' })
  const poller = Bun.spawn([...(isRoot ? ['setpriv', '--reuid=65534', '--regid=65534', '--clear-groups'] : []), '/usr/bin/perl', '-e', POLLER, String(proc.pid)], { env: { NEEDLE: needle }, stdout: 'pipe', stderr: 'pipe' })
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
  const polled = await new Response(poller.stdout).text()
  expect(await poller.exited).toBe(0)
  // The poller did read the command line (as nobody), many times over the command's life.
  expect(Number(/end (\d+)\n$/.exec(polled)?.[1])).toBeGreaterThan(20)
  const seen = polled.split('\n').filter((l) => /^\d/.test(l)).map(Number)
  return { code, stdout, stderr, seen, started, first: firstConnection() }
}

describe.skipIf(process.platform !== 'linux')('secrets on argv through dist/muster', () => {
  test('worker join --enrollment-token: a poller as nobody never sees the token once the join talks to the Platform; the join works and says where the token belongs', { timeout: 90_000 }, async () => {
    using dir = tmpDir()
    await using serve = await startServeWithListener(`${dir.path}/platform`)
    const { token } = JSON.parse((await runMuster(['nodes', 'enroll-token', 'w1', '--json'], { env: serve.env })).stdout) as { token: string }
    const listener = new URL(serve.enrollUrl)
    using front = await relay({ host: listener.hostname, port: Number(listener.port) })
    const r = await watched(
      ['worker', 'join', '--enrollment-token', token, '--platform-url', `https://${front.url}`, '--platform-fingerprint', serve.fingerprint, '--node-id', 'w1', '--address', '127.0.0.1', '--data-dir', `${dir.path}/w1`],
      token,
      front.firstConnection,
    )
    expect([r.code, r.stdout + r.stderr]).toEqual([0, expect.stringContaining('Joined as w1')])
    expect(r.stderr).toContain('--enrollment-token on the command line lands in shell history')
    expect(r.stderr).toContain('stdin, --enrollment-token-file FILE or $MUSTER_ENROLLMENT_TOKEN')
    expect(r.first).toBeDefined()
    // What the poller could still catch: the runtime's start-up, before muster's first line of code.
    const after = r.seen.filter((t) => t >= r.first!)
    const startupWindowMs = r.seen.length ? Math.round(Math.max(...r.seen) - r.started) : 0
    console.log(`argv: the poller saw the token ${r.seen.length} time(s), the last ${startupWindowMs} ms after the spawn; ${after.length} after the join's first connection`)
    expect(after).toEqual([])
    // The token went into the join's records only as the Platform's answer: nothing left in the process list, nothing printed.
    expect(r.stdout + r.stderr).not.toContain(token)
  })

  test('the flag in the camelCase the parser also takes (--enrollmentToken) is hidden and warned about the same way', { timeout: 90_000 }, async () => {
    using dir = tmpDir()
    await using serve = await startServeWithListener(`${dir.path}/platform`)
    const { token } = JSON.parse((await runMuster(['nodes', 'enroll-token', 'w2', '--json'], { env: serve.env })).stdout) as { token: string }
    const listener = new URL(serve.enrollUrl)
    using front = await relay({ host: listener.hostname, port: Number(listener.port) })
    const r = await watched(
      ['worker', 'join', `--enrollmentToken=${token}`, '--platform-url', `https://${front.url}`, '--platform-fingerprint', serve.fingerprint, '--node-id', 'w2', '--address', '127.0.0.1', '--data-dir', `${dir.path}/w2`],
      token,
      front.firstConnection,
    )
    // The parser took the token from that spelling: the join used it.
    expect([r.code, r.stdout + r.stderr]).toEqual([0, expect.stringContaining('Joined as w2')])
    expect(r.stderr).toContain('--enrollment-token on the command line lands in shell history')
    expect(r.first).toBeDefined()
    expect(r.seen.filter((t) => t >= r.first!)).toEqual([])
    expect(r.stdout + r.stderr).not.toContain(token)
  })

  test('--token on any client command is hidden the same way', { timeout: 60_000 }, async () => {
    using dir = tmpDir()
    await using serve = await startServeWithListener(`${dir.path}/platform`)
    const api = new URL(serve.url)
    using front = await relay({ host: api.hostname, port: Number(api.port) })
    const r = await watched(['nodes', 'list', '--json', '--platform-url', `http://${front.url}`, '--token', serve.env.MUSTER_TOKEN], serve.env.MUSTER_TOKEN, front.firstConnection, { MUSTER_TOKEN: '' })
    expect(r.code).toBe(0)
    expect(JSON.parse(r.stdout)).toHaveProperty('nodes')
    expect(r.stderr).toContain('--token on the command line lands in shell history')
    expect(r.seen.filter((t) => t >= r.first!)).toEqual([])
  })
})
