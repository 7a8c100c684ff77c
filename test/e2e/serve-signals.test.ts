// Signals to `muster serve` through the compiled binary (issue 27): kill -9
// as the crash tests do it kills the engine too (no clean stop: its leases are
// still taken); SIGTERM while an old engine still drains after a swap stops
// every engine at once; and a SIGHUP that arrives during a swap is not lost.
import { describe, expect, test } from 'bun:test'
import { Database } from 'bun:sqlite'
import { chmodSync, copyFileSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs'
import { connect } from 'node:net'
import { childPids } from '../../src/swap/kill.ts'
import { killServeHard, musterBin, startMuster } from '../helpers/binary.ts'
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
      process.kill(serve.proc.pid, 'SIGHUP')
      const m = await serve.waitForLog(/engine swap: engine (\d+) \(muster \S+\) serves; .* engine (\d+) drains/, 60_000)
      const [engine, oldEngine] = [Number(m[1]), Number(m[2])]
      expect(alive(oldEngine)).toBe(true)
      const stopping = Date.now()
      serve.proc.kill('SIGTERM')
      // At once: not when the old engine's linger for the idle client ends.
      await waitFor(() => serve.proc.exitCode !== null, { what: 'serve to exit', timeoutMs: 15_000 })
      expect(Date.now() - stopping).toBeLessThan(15_000)
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
    process.kill(serve.proc.pid, 'SIGHUP')
    await serve.waitForLog(/SIGHUP: replacing engine/, 30_000)
    process.kill(serve.proc.pid, 'SIGHUP')
    await serve.waitForLog(/an engine swap is under way; another one follows it/, 30_000)
    // The second starts as soon as the first completes.
    await serve.waitForLog(/engine swap complete/, 60_000)
    await waitFor(() => (serve.log().match(/SIGHUP: replacing engine/g)?.length ?? 0) >= 2, { what: 'the second swap started', timeoutMs: 15_000 })
    await waitFor(() => (serve.log().match(/engine swap complete/g)?.length ?? 0) >= 2, { what: 'two swaps complete', timeoutMs: 60_000 })
    const engines = [...serve.log().matchAll(/engine swap: engine (\d+) \(muster \S+\) serves/g)].map((m) => Number(m[1]))
    expect(new Set(engines).size).toBe(2)
    expect(childPids(serve.proc.pid)).toEqual([engines[1]!])
  })
})
