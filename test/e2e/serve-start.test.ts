// `muster serve` refuses what cannot work before it creates anything
// (docs/operations.md): a busy port, a data directory it cannot write, a listener other
// machines reach with an API only this machine reaches; and every address flag
// binds what it says (--host ADDR with the listener on ADDR: test/e2e/remote-machines.test.ts).
import { describe, expect, test } from 'bun:test'
import { chmodSync, existsSync, mkdirSync } from 'node:fs'
import { createServer, connect, type Server } from 'node:net'
import { freePort } from '../../src/addresses.ts'
import { musterBin, runMuster, startServe } from '../helpers/binary.ts'
import { asRoot } from '../helpers/root.ts'
import { tmpDir } from '../helpers/tmp.ts'

const hold = async (port: number, host = '127.0.0.1'): Promise<Server> => {
  const s = createServer()
  await new Promise<void>((resolve) => s.listen(port, host, () => resolve()))
  return s
}
const reaches = (host: string, port: number) =>
  new Promise<boolean>((resolve) => {
    const c = connect(port, host, () => (c.destroy(), resolve(true)))
    c.on('error', () => resolve(false))
  })
/** One line on stderr, exit 1, and the data directory never made. */
const refusedCleanly = (r: { code: number; stderr: string }, data: string) => {
  expect(r.stderr.trim().split('\n')).toHaveLength(1)
  expect(r.stderr).not.toContain('unexpected error')
  expect(r.code).toBe(1)
  expect(existsSync(data)).toBe(false)
}

describe('serve checks before it creates anything', () => {
  test('a busy API port: one line, and no CA, key, account or password file', async () => {
    using dir = tmpDir()
    const port = await freePort()
    const busy = await hold(port)
    try {
      const data = `${dir.path}/data`
      const r = await runMuster(['serve', '--data-dir', data, '--port', String(port)])
      expect(r.stderr).toContain(`Port ${port} on 127.0.0.1 is already in use`)
      expect(r.stderr).toContain('--port')
      refusedCleanly(r, data)
    } finally {
      busy.close()
    }
  })

  test('a busy enrollment port: the same', async () => {
    using dir = tmpDir()
    const port = await freePort()
    const busy = await hold(port)
    try {
      const data = `${dir.path}/data`
      const r = await runMuster(['serve', '--data-dir', data, '--port', '0', '--enrollment-port', String(port), '--enrollment-address', '127.0.0.1'])
      expect(r.stderr).toContain(`Port ${port} on 127.0.0.1 is already in use`)
      expect(r.stderr).toContain('--enrollment-port')
      refusedCleanly(r, data)
    } finally {
      busy.close()
    }
  })

  test('a data directory this user cannot write: one line naming it, not EACCES', async () => {
    using dir = tmpDir()
    chmodSync(dir.path, 0o755)
    const locked = `${dir.path}/locked`
    mkdirSync(locked, { mode: 0o555 })
    const data = `${locked}/data`
    // As root every directory is writable: run as nobody instead.
    const r = asRoot
      ? await (async () => {
          const p = Bun.spawn(['setpriv', '--reuid=65534', '--regid=65534', '--clear-groups', await musterBin(), 'serve', '--data-dir', data, '--port', '0'], { stdout: 'pipe', stderr: 'pipe', env: { ...process.env, NO_COLOR: '1' } })
          return { code: await p.exited, stderr: await new Response(p.stderr).text() }
        })()
      : await runMuster(['serve', '--data-dir', data, '--port', '0'])
    expect(r.stderr).toContain(`Cannot write the data directory: ${locked} (where ${data} would be created) is not writable by this user`)
    refusedCleanly(r, data)
  })

  test('a listener other machines reach with a loopback-only API is refused with the command that fixes it', async () => {
    using dir = tmpDir()
    const data = `${dir.path}/data`
    const bin = await musterBin()
    const r = await runMuster(['serve', '--data-dir', data, '--port', '0', '--enrollment-port', '7443', '--enrollment-address', '192.0.2.10'])
    expect(r.stderr).toContain('Refusing to start: the enrollment listener is reachable from other machines (192.0.2.10) but the API listens on 127.0.0.1 only')
    expect(r.stderr).toContain(`Run: ${bin} serve --data-dir ${data} --port 0 --enrollment-port 7443 --enrollment-address 192.0.2.10 --host 192.0.2.10 (`)
    refusedCleanly(r, data)
    // --host given as loopback on purpose is replaced in the suggestion, not repeated
    const again = await runMuster(['serve', '--data-dir', data, '--host=127.0.0.1', '--enrollment-port', '7443', '--enrollment-address', '192.0.2.10'])
    expect(again.stderr).toContain(`Run: ${bin} serve --data-dir ${data} --enrollment-port 7443 --enrollment-address 192.0.2.10 --host 192.0.2.10 (`)
    refusedCleanly(again, data)
  })
})

describe('every address flag binds what it says', () => {
  test('--enrollment-address 127.0.0.2 listens on 127.0.0.2, not on 127.0.0.1', { timeout: 60_000 }, async () => {
    using dir = tmpDir()
    await using serve = await startServe(`${dir.path}/data`, ['--enrollment-port', '0', '--enrollment-address', '127.0.0.2', '--no-local-node'])
    const [, url, port] = (await serve.waitForLog(/enrollment listener on (https:\/\/127\.0\.0\.2:(\d+)) .*bound on 127\.0\.0\.2\)/)) as unknown as [string, string, string]
    expect(url).toBe(`https://127.0.0.2:${port}`)
    expect(await reaches('127.0.0.2', Number(port))).toBe(true)
    expect(await reaches('127.0.0.1', Number(port))).toBe(false)
  })

})
