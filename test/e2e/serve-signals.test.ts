// Signals to `muster serve` through the compiled binary: kill -9
// as the crash tests do it kills the engine too (no clean stop: its leases are
// still taken); SIGTERM while an old engine still drains after a swap stops
// every engine at once; a SIGHUP that arrives during a swap is not lost; and
// each way a swap can fail, one at a time (test/e2e/engine-swap.test.ts runs
// them all in a row under traffic): a bad file refused before the old engine
// stops, a binary that exits or never answers, one that cannot open the
// Platform (the old binary image takes over), an engine started by hand, and
// on PostgreSQL the order in which the two engines use the store.
import { describe, expect, test } from 'bun:test'
import { Database } from 'bun:sqlite'
import { chmodSync, copyFileSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs'
import { connect } from 'node:net'
import { childPids } from '../../src/swap/kill.ts'
import { killServeHard, musterBin, startMuster, type Daemon } from '../helpers/binary.ts'
import { freshDatabase } from '../helpers/postgres.ts'
import { tmpDir, waitFor } from '../helpers/tmp.ts'

/** Running (a zombie waiting for its reaper counts as gone: it ran to its end). */
const alive = (pid: number) => {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    return stat.slice(stat.lastIndexOf(') ') + 2, stat.lastIndexOf(') ') + 3) !== 'Z'
  } catch {
    return false
  }
}

/** Waits until serve's only running child is `engine` (a killed or exited one may take a moment to be reaped). */
async function onlyEngine(serve: Daemon, engine: number): Promise<void> {
  const running = () => childPids(serve.proc.pid).filter(alive)
  await waitFor(() => running().length === 1 && running()[0] === engine, { what: `engine ${engine} alone under serve`, timeoutMs: 5_000 }).catch(() => {})
  expect(running()).toEqual([engine])
}

/** A copy of dist/muster at dir/bin/muster, replaceable the way an upgrade replaces it. */
async function binaryIn(dir: string): Promise<{ bin: string; replaceWith(script: string): void; real: string }> {
  const real = await musterBin()
  const bin = `${dir}/bin/muster`
  mkdirSync(`${dir}/bin`, { recursive: true })
  copyFileSync(real, bin)
  chmodSync(bin, 0o755)
  return {
    bin,
    real,
    replaceWith(script) {
      writeFileSync(`${bin}.next`, script)
      chmodSync(`${bin}.next`, 0o755)
      renameSync(`${bin}.next`, bin)
    },
  }
}

describe('serve and its signals through dist/muster', () => {
  test('kill -9 kills the engine as well as serve: it stops nothing cleanly and gives no lease up', { timeout: 60_000 }, async () => {
    using dir = tmpDir()
    const data = `${dir.path}/platform`
    await using serve = await startMuster(['serve', '--data-dir', data, '--port', '0'])
    await serve.waitForLog(/listening on (https?:\/\/\S+)/)
    const [engine] = childPids(serve.proc.pid)
    expect(engine).toBeGreaterThan(0)
    const db = `${data}/muster.db`
    const leases = () => {
      const d = new Database(db, { readonly: true })
      try {
        return d.query('SELECT name, expires_at FROM leases').all() as { name: string; expires_at: number }[]
      } finally {
        d.close()
      }
    }
    await waitFor(() => leases().length > 0, { what: 'leases taken' })
    await killServeHard(serve)
    expect(alive(engine!)).toBe(false)
    // A clean stop would have given every lease up (expires_at 0); a crash leaves them to expire.
    const left = leases()
    expect(left.length).toBeGreaterThan(0)
    for (const l of left) expect(`${l.name} ${l.expires_at > 0 ? 'still taken' : 'given up'}`).toBe(`${l.name} still taken`)
    expect(serve.log()).not.toContain('the muster serve process is gone')
  })

  test('SIGTERM while the old engine still drains after a swap stops every engine at once', { timeout: 120_000 }, async () => {
    using dir = tmpDir()
    const { bin } = await binaryIn(dir.path)
    const data = `${dir.path}/platform`
    await using serve = await startMuster(['serve', '--data-dir', data, '--port', '0'], { bin, env: { MUSTER_SWAP_LINGER_SECONDS: '90' } })
    const url = new URL((await serve.waitForLog(/listening on (http:\/\/\S+)/))[1]!)
    // A keep-alive client that stays idle after one request: the old engine lingers for it (up to 90 s).
    const idle = connect(Number(url.port), url.hostname)
    idle.on('error', () => {})
    let reply = ''
    idle.on('data', (d) => (reply += d.toString()))
    idle.write(`GET /healthz HTTP/1.1\r\nHost: ${url.host}\r\n\r\n`)
    await waitFor(() => reply.startsWith('HTTP/1.1 200'), { what: 'the keep-alive answer' })
    try {
      await hup(serve)
      const m = await serve.waitForLog(/engine swap: engine (\d+) \(muster \S+\) serves; .* engine (\d+) drains/, 60_000)
      const [engine, oldEngine] = [Number(m[1]), Number(m[2])]
      expect(alive(oldEngine)).toBe(true)
      const stopping = Date.now()
      serve.proc.kill('SIGTERM')
      // At once: not when the old engine's linger for the idle client ends.
      await waitFor(() => serve.proc.exitCode !== null, { what: 'serve to exit', timeoutMs: 10_000 })
      expect(Date.now() - stopping).toBeLessThan(10_000)
      expect(serve.proc.exitCode).toBe(0)
      await waitFor(() => !alive(oldEngine) && !alive(engine), { what: 'both engines gone', timeoutMs: 5_000 })
    } finally {
      idle.destroy()
    }
  })

  test('a SIGHUP that arrives during a swap runs another swap after it', { timeout: 120_000 }, async () => {
    using dir = tmpDir()
    const b = await binaryIn(dir.path)
    const data = `${dir.path}/platform`
    await using serve = await startMuster(['serve', '--data-dir', data, '--port', '0'], { bin: b.bin, env: { MUSTER_SWAP_LINGER_SECONDS: '0' } })
    await serve.waitForLog(/listening on (http:\/\/\S+)/)
    // The new binary takes a second to start, so the second SIGHUP surely lands inside the first swap.
    b.replaceWith(`#!/bin/sh\nsleep 1\nexec '${b.real}' "$@"\n`)
    await hup(serve)
    process.kill(serve.proc.pid, 'SIGHUP') // while the first swap runs
    await serve.waitForLog(/an engine swap is under way; another one follows it/, 30_000)
    // The second starts as soon as the first completes.
    await serve.waitForLog(/engine swap complete/, 60_000)
    await waitFor(() => (serve.log().match(/SIGHUP: replacing engine/g)?.length ?? 0) >= 2, { what: 'the second swap started', timeoutMs: 10_000 })
    await waitFor(() => (serve.log().match(/engine swap complete/g)?.length ?? 0) >= 2, { what: 'two swaps complete', timeoutMs: 60_000 })
    const engines = [...serve.log().matchAll(/engine swap: engine (\d+) \(muster \S+\) serves/g)].map((m) => Number(m[1]))
    expect(new Set(engines).size).toBe(2)
    await onlyEngine(serve, engines[1]!)
  })

  test('a bad nodes file or fleet-token file is refused before the old engine stops; a binary that exits changes nothing, and each SIGHUP reads the nodes file again', { timeout: 120_000 }, async () => {
    using dir = tmpDir()
    const b = await binaryIn(dir.path)
    const data = `${dir.path}/platform`
    const fleetToken = `${dir.path}/fleet-token`
    writeFileSync(fleetToken, 'a-fleet-token-of-some-length\n', { mode: 0o600 })
    const nodesFile = `${dir.path}/nodes.json`
    const declare = (zone: string) => writeFileSync(nodesFile, JSON.stringify({ nodes: [{ name: 'w1', labels: { zone } }] }))
    declare('a')
    await using serve = await startMuster(['serve', '--data-dir', data, '--port', '0', '--fleet-token-file', fleetToken, '--nodes-file', nodesFile], { bin: b.bin })
    await serve.waitForLog(/listening on (http:\/\/\S+)/)
    const [engine] = childPids(serve.proc.pid)
    const refused = (code: number) => count(serve, new RegExp(`did not start: it exited with code ${code}; engine ${engine} keeps serving`))
    const reloaded = () => count(serve, /nodes file \S+ reloaded: 1 declared node/)
    // 1. a nodes file that does not parse: the new engine refuses it before the old one stops anything
    writeFileSync(nodesFile, '{"nodes": [\n  {"name": "w1"},\n  {"name": "w1"}\n]}\n')
    await hup(serve)
    await waitFor(() => refused(1) === 1 || serve.proc.exitCode !== null, { what: 'the bad nodes file refused', timeoutMs: 30_000 })
    expect(refused(1)).toBe(1)
    expect(serve.log()).toMatch(/--nodes-file \S+ line 3: .*w1 is declared twice/)
    // 2. a fleet-token file others can read: refused the same way
    declare('b')
    chmodSync(fleetToken, 0o644)
    await hup(serve)
    await waitFor(() => refused(1) === 2 || serve.proc.exitCode !== null, { what: 'the open fleet-token file refused', timeoutMs: 30_000 })
    expect(refused(1)).toBe(2)
    expect(serve.log()).toContain(`${fleetToken} is accessible by group or others`)
    chmodSync(fleetToken, 0o600)
    // 3. a binary that exits at once: the engine keeps serving, and reads the nodes file again as a SIGHUP asks
    const before = reloaded()
    declare('c')
    b.replaceWith('#!/bin/sh\necho "this build is broken" >&2\nexit 3\n')
    await hup(serve)
    await waitFor(() => refused(3) === 1 || serve.proc.exitCode !== null, { what: 'the broken binary refused', timeoutMs: 30_000 })
    expect(refused(3)).toBe(1)
    await waitFor(() => reloaded() > before, { what: 'the nodes file read again by the engine that kept serving', timeoutMs: 10_000 })
    await onlyEngine(serve, engine!)
  })

  test('a new binary that never answers is killed after 10 s and the engine keeps serving', { timeout: 60_000 }, async () => {
    using dir = tmpDir()
    const b = await binaryIn(dir.path)
    await using serve = await startMuster(['serve', '--data-dir', `${dir.path}/platform`, '--port', '0'], { bin: b.bin })
    const url = (await serve.waitForLog(/listening on (http:\/\/\S+)/))[1]!
    const [engine] = childPids(serve.proc.pid)
    b.replaceWith('#!/bin/sh\nexec sleep 120\n')
    const sent = Date.now()
    await hup(serve)
    await serve.waitForLog(new RegExp(`engine swap failed: .* did not start: no answer within 10 s; engine ${engine} keeps serving`), 20_000)
    expect(Date.now() - sent).toBeGreaterThanOrEqual(9_000)
    await onlyEngine(serve, engine!)
    expect((await fetch(`${url}/healthz`)).status).toBe(200)
  })

  test("a new binary that starts but cannot open the Platform: the old engine's own binary image takes over", { timeout: 90_000 }, async () => {
    using dir = tmpDir()
    const b = await binaryIn(dir.path)
    await using serve = await startMuster(['serve', '--data-dir', `${dir.path}/platform`, '--port', '0'], { bin: b.bin, env: { MUSTER_SWAP_LINGER_SECONDS: '0' } })
    const url = (await serve.waitForLog(/listening on (http:\/\/\S+)/))[1]!
    b.replaceWith(`#!/bin/sh\nMUSTER_FEDERATION_HEARTBEAT_SECONDS=nonsense exec '${b.real}' "$@"\n`)
    await hup(serve)
    await serve.waitForLog(/engine swap complete/, 60_000)
    expect(serve.log()).toMatch(/engine swap: engine \d+ could not take over: MUSTER_FEDERATION_HEARTBEAT_SECONDS must be/)
    expect(serve.log()).toMatch(/starting the old engine's binary again \(\/proc\/\d+\/exe\)/)
    expect((await fetch(`${url}/healthz`)).status).toBe(200)
  })

  test('an engine started by hand beside the serve that holds the data directory is refused', { timeout: 60_000 }, async () => {
    using dir = tmpDir()
    const data = `${dir.path}/platform`
    await using serve = await startMuster(['serve', '--data-dir', data, '--port', '0'])
    await serve.waitForLog(/listening on (http:\/\/\S+)/)
    // (a rogue engine that got through would say it listens: no need to wait for a timeout)
    await using rogue = await startMuster(['serve', '--data-dir', data, '--port', '0'], { env: { MUSTER_SERVE_ENGINE: 'first' } })
    await waitFor(() => rogue.proc.exitCode !== null || /listening on/.test(rogue.log()), { what: 'the hand-started engine to exit or listen' })
    expect(rogue.log()).toContain('was not started by the muster serve holding the data directory')
    expect(rogue.proc.exitCode).toBe(1)
  })

  test('on PostgreSQL the new engine opens the shared store only after the old one quiesced', { timeout: 90_000 }, async () => {
    using dir = tmpDir()
    const pg = await freshDatabase()
    try {
      await using serve = await startMuster(['serve', '--data-dir', `${dir.path}/platform`, '--port', '0', '--database', pg.url], { env: { MUSTER_SWAP_LINGER_SECONDS: '0', MUSTER_LOG_LEVEL: '4' } })
      await serve.waitForLog(/listening on (http:\/\/\S+)/)
      await hup(serve)
      // Judged the moment the new engine listens (it must have waited for the old one to quiesce).
      await waitFor(() => count(serve, /muster Platform listening on/) >= 2, { what: 'the new engine listening', timeoutMs: 60_000 })
      const log = serve.log()
      const quiesced = log.search(/engine swap: engine \d+ quiesced/)
      const listening = [...log.matchAll(/muster Platform listening on/g)].map((m) => m.index!)
      expect(quiesced).toBeGreaterThan(0)
      expect(listening).toHaveLength(2)
      expect(listening[1]!).toBeGreaterThan(quiesced)
    } finally {
      await pg.drop()
    }
  })
})

const count = (d: Daemon, re: RegExp) => d.log().match(new RegExp(re.source, 'g'))?.length ?? 0

/** SIGHUP to serve once its engine serves (until then serve answers that there is nothing to replace yet, and the test sends it again). */
async function hup(serve: Daemon): Promise<void> {
  const replacing = () => count(serve, /SIGHUP: replacing engine/)
  const starting = () => count(serve, /SIGHUP: the engine is still starting/)
  const before = replacing()
  const deadline = Date.now() + 30_000
  while (replacing() === before) {
    if (Date.now() > deadline) throw new Error(`serve never took the SIGHUP:\n${serve.log()}`)
    const warned = starting()
    process.kill(serve.proc.pid, 'SIGHUP')
    await waitFor(() => replacing() > before || starting() > warned || serve.proc.exitCode !== null, { what: 'serve to take the SIGHUP', timeoutMs: 10_000 })
    if (serve.proc.exitCode !== null) throw new Error(`serve exited:\n${serve.log()}`)
    if (replacing() === before) await Bun.sleep(100)
  }
}
