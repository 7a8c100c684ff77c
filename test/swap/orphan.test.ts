// an engine whose supervisor dies exits, through dist/muster.
// The IPC disconnect stops a running engine cleanly; an engine whose event loop
// cannot run (here: blocked opening a FIFO given as --fleet-token-file, with no
// writer left after serve's own check read it; as a runaway match once blocked
// it) is ended by its watch thread instead of holding on for good.
import { describe, expect, test } from 'bun:test'
import { existsSync, readFileSync } from 'node:fs'
import { childPids } from '../../src/swap/kill.ts'
import { ORPHAN_GRACE_MS } from '../../src/swap/orphan-watch.ts'
import { startMuster, startServe } from '../helpers/binary.ts'
import { tmpDir, waitFor } from '../helpers/tmp.ts'

const alive = (pid: number) => existsSync(`/proc/${pid}`) && !/\) Z /.test(readFileSync(`/proc/${pid}/stat`, 'utf8'))
const refused = async (url: string) => fetch(`${url}/healthz`).then(() => false, () => true)

describe.skipIf(process.platform !== 'linux')('an engine whose muster serve is killed', () => {
  test('a serving engine stops cleanly and frees its port', { timeout: 60_000 }, async () => {
    using dir = tmpDir()
    await using serve = await startServe(`${dir.path}/d`)
    const [engine] = await waitFor(() => (childPids(serve.proc.pid).length === 1 ? childPids(serve.proc.pid) : null), { what: 'the engine' })
    expect((await fetch(`${serve.url}/healthz`)).status).toBe(200)
    serve.proc.kill('SIGKILL')
    try {
      await waitFor(() => !alive(engine!), { timeoutMs: ORPHAN_GRACE_MS, what: 'the engine to stop on its own' })
      expect(serve.log()).toContain('the muster serve process is gone; stopping')
      expect(await refused(serve.url)).toBe(true)
    } finally {
      if (alive(engine!)) process.kill(engine!, 'SIGKILL')
    }
  })

  test('an engine whose event loop is stuck is killed by its watch', { timeout: 60_000 }, async () => {
    using dir = tmpDir()
    const fifo = `${dir.path}/fleet-token`
    expect(Bun.spawnSync(['mkfifo', '-m', '600', fifo]).exitCode).toBe(0)
    await using serve = await startMuster(['serve', '--data-dir', `${dir.path}/d`, '--port', '0', '--fleet-token-file', fifo])
    // serve itself reads the file once before it starts the engine (its preflight): one writer feeds that read.
    const writer = Bun.spawn(['sh', '-c', `printf '%s\\n' fleet-token-0123456789abcdef > '${fifo}'`], { stdio: ['ignore', 'ignore', 'ignore'] })
    expect(await writer.exited).toBe(0)
    // The engine blocks in open(2) of the FIFO: its main thread runs nothing until a writer comes.
    const engine = await waitFor(() => childPids(serve.proc.pid).find((pid) => /fifo|pipe|partner/.test(readFileSync(`/proc/${pid}/wchan`, 'utf8'))), { what: 'the engine blocked on the FIFO' })
    serve.proc.kill('SIGKILL')
    try {
      await waitFor(() => !alive(engine), { timeoutMs: ORPHAN_GRACE_MS + 20_000, what: 'the stuck engine to be killed' })
      expect(serve.log()).toContain('is gone and the engine did not stop within 10 s; killing it')
    } finally {
      if (alive(engine)) process.kill(engine, 'SIGKILL')
    }
  })
})
