// The two kernel facts an engine swap stands on, shown with real sockets:
// steering sends every new connection of a reuseport group to the newest
// listener, and an old listener closed only once drained resets nothing even
// when connections were waiting in its accept queue.
import { describe, expect, test } from 'bun:test'
import { writeFileSync } from 'node:fs'
import { connect } from 'node:net'
import { join, resolve } from 'node:path'
import { steerToNewest } from '../../src/sockets/steer.ts'
import { tmpDir, waitFor } from '../helpers/tmp.ts'

const ROOT = resolve(import.meta.dir, '../..')

/** One HTTP/1.1 request on a fresh connection: when the handshake is done, and the body (or the error). */
function request(port: number): { connected: Promise<void>; reply: Promise<string> } {
  let connected!: () => void
  const c = new Promise<void>((resolve) => (connected = resolve))
  const reply = new Promise<string>((done) => {
    const s = connect(port, '127.0.0.1')
    let text = ''
    s.on('connect', () => {
      connected()
      s.write('GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n')
    })
    s.on('data', (d) => (text += d.toString()))
    s.on('error', (e) => done(`error ${(e as NodeJS.ErrnoException).code ?? e.message}`))
    s.on('close', () => {
      connected()
      done(text.slice(text.indexOf('\r\n\r\n') + 4) || 'closed without an answer')
    })
  })
  return { connected: c, reply }
}
const once = (port: number) => request(port).reply

describe('engine swap sockets', () => {
  test('steering: once the newest listener steers the group, every new connection goes to it', async () => {
    const a = Bun.serve({ hostname: '127.0.0.1', port: 0, reusePort: true, fetch: () => new Response('old') })
    const b = Bun.serve({ hostname: '127.0.0.1', port: a.port, reusePort: true, fetch: () => new Response('new') })
    try {
      const before = await Promise.all(Array.from({ length: 64 }, () => once(a.port!)))
      expect(new Set(before)).toEqual(new Set(['old', 'new'])) // the kernel spreads them
      expect(await steerToNewest(a.port!)).toBe(2) // both listeners are ours here; the program is the group's
      const after = await Promise.all(Array.from({ length: 64 }, () => once(a.port!)))
      expect(new Set(after)).toEqual(new Set(['new']))
    } finally {
      await a.stop(true)
      await b.stop(true)
    }
  })

  test('drain: connections waiting in the old listener’s queue are served, not reset, when it closes', async () => {
    using dir = tmpDir()
    const go = join(dir.path, 'go')
    const script = join(dir.path, 'old-engine.ts')
    // The old engine: a reuseport listener whose event loop is stuck until `go` exists (so connections queue
    // unaccepted), then it drains and closes the listener the way engine.ts does.
    writeFileSync(
      script,
      `import { createServer } from 'node:net'
import { existsSync } from 'node:fs'
import { socketCallsAvailable } from '${ROOT}/src/sockets/libc.ts'
import { untilListenersDrained } from '${ROOT}/src/sockets/sockets.ts'
await socketCallsAvailable()
const srv = createServer((c) => c.end('HTTP/1.1 200 OK\\r\\ncontent-length: 3\\r\\nconnection: close\\r\\n\\r\\nold'))
await new Promise((r) => srv.listen({ port: 0, host: '127.0.0.1', reusePort: true }, r))
const port = srv.address().port
process.stdout.write(port + '\\n')
while (!existsSync(${JSON.stringify(go)})) {}
const drained = await untilListenersDrained(port, 5000)
srv.close()
process.stdout.write('closed ' + drained + '\\n')
await Bun.sleep(1000)
`,
    )
    const old = Bun.spawn([process.execPath, script], { stdout: 'pipe', stderr: 'inherit', cwd: ROOT })
    let out = ''
    void (async () => {
      for await (const c of old.stdout) out += new TextDecoder().decode(c)
    })()
    try {
      const port = Number((await waitFor(() => /^(\d+)\n/.exec(out), { what: 'the old listener' }))[1])
      // Connections that finish their handshake while the old engine is busy wait in its accept queue.
      const queued = Array.from({ length: 20 }, () => request(port))
      await Promise.all(queued.map((q) => q.connected)) // the kernel completes handshakes; nothing accepts them yet
      // The new engine binds beside it and steers the group to itself.
      const next = Bun.serve({ hostname: '127.0.0.1', port, reusePort: true, fetch: () => new Response('new') })
      try {
        expect(await steerToNewest(port)).toBe(1)
        expect(new Set(await Promise.all(Array.from({ length: 20 }, () => once(port))))).toEqual(new Set(['new']))
        writeFileSync(go, '')
        await waitFor(() => out.includes('closed'), { what: 'the old listener to close' })
        expect(out).toContain('closed true')
        expect(await Promise.all(queued.map((q) => q.reply))).toEqual(Array(20).fill('old'))
        expect(new Set(await Promise.all(Array.from({ length: 20 }, () => once(port))))).toEqual(new Set(['new']))
      } finally {
        await next.stop(true)
      }
    } finally {
      old.kill()
      await old.exited
    }
  })
})
