// `muster serve` as the service manager sees it: one process that holds
// platform/serve.lock for its whole life and runs the Platform in an engine
// child (the same command line less a --database URL, which goes in the engine's
// environment; the binary at the same path). Its pid never
// changes, so systemd's MAINPID, `kill -HUP <serve pid>` and a container's
// PID 1 all stay right across engine swaps.
//
// SIGHUP replaces the engine with the binary now on disk (docs/nodes.md):
//  1. start the new binary as a replacement engine; it must start and say so
//     within 10 s, or it is killed and the old engine keeps serving as if
//     nothing happened (the log says why);
//  2. the old engine quiesces: holds new requests, answers long polls,
//     finishes what runs, stops its loops, flushes heartbeats, closes the store;
//  3. the new engine opens the store, binds beside the old one, steers new
//     connections to itself and serves; if it cannot, a fresh engine from the
//     old engine's own binary image (/proc/PID/exe) takes over the same way;
//  4. the old engine forwards what it still receives, drains both ports
//     without resetting a connection, and exits (src/swap/engine.ts).
// SIGTERM/SIGINT stop every engine, then release the lock.
import type { Subprocess } from 'bun'
import { existsSync } from 'node:fs'
import { resolve } from 'node:path'
import { DataDir } from '../datadir.ts'
import { log } from '../log.ts'
import { acquireServeLock } from '../serve-lock.ts'
import { DATABASE_URL_ENV, withoutDatabaseArg } from '../store/database-url.ts'
import { ENGINE_ENV, type ProbeState, type ToEngine, type ToSupervisor } from './protocol.ts'

export const START_WITHIN_MS = 10_000
const QUIESCE_WITHIN_MS = 60_000
const OPEN_WITHIN_MS = 60_000

type Serving = Extract<ToSupervisor, { t: 'serving' }>

class Engine {
  readonly proc: Subprocess
  readonly exited: Promise<number>
  serving: Serving | undefined
  /** The supervisor asked it to go (swap or stop): its exit is not a failure. */
  leaving = false
  private readonly inbox: ToSupervisor[] = []
  private readonly wakers = new Set<() => void>()
  private done = false

  constructor(cmd: string[], role: 'first' | 'takeover', env: Record<string, string>) {
    this.proc = Bun.spawn(cmd, {
      stdio: ['ignore', 'inherit', 'inherit'],
      env: { ...process.env, ...env, [ENGINE_ENV]: role },
      serialization: 'json',
      ipc: (m) => {
        this.inbox.push(m as ToSupervisor)
        for (const wake of this.wakers) wake()
      },
    })
    this.exited = this.proc.exited.then((code) => {
      this.done = true
      for (const wake of this.wakers) wake()
      return code
    })
  }

  get pid(): number {
    return this.proc.pid
  }

  tell(m: ToEngine): void {
    try {
      return this.proc.send(m) // (Bun: a plain call, nothing to await)
    } catch {} // it exited; its exit is handled
  }

  /** The next message of type `t`; rejects with the reason when the engine fails, exits or takes too long. */
  async expect<T extends ToSupervisor['t']>(t: T, withinMs: number): Promise<Extract<ToSupervisor, { t: T }>> {
    const until = Date.now() + withinMs
    for (;;) {
      const i = this.inbox.findIndex((m) => m.t === t || m.t === 'failed')
      if (i >= 0) {
        const m = this.inbox.splice(i, 1)[0]!
        if (m.t === 'failed') throw new Error(m.message)
        return m as Extract<ToSupervisor, { t: T }>
      }
      if (this.done) throw new Error(`it exited with code ${this.proc.exitCode ?? this.proc.signalCode}`)
      const left = until - Date.now()
      if (left <= 0) throw new Error(`no answer within ${withinMs / 1000} s`)
      await new Promise<void>((resolve) => {
        const wake = () => {
          clearTimeout(t)
          this.wakers.delete(wake)
          resolve()
        }
        const t = setTimeout(wake, left)
        this.wakers.add(wake)
      })
    }
  }

  kill(signal: NodeJS.Signals = 'SIGKILL'): void {
    this.leaving = true
    if (!this.done) this.proc.kill(signal)
  }
}

export class Supervisor {
  /** The binary's path as started: an upgrade replaces the file there, and that is what a swap runs. */
  private readonly binary = startedAs()
  private readonly args: string[]
  private current!: Engine
  private readonly engines = new Set<Engine>()
  private swapping = false
  private again = false
  private stopping = false
  private exitWith!: (code: number) => void
  private readonly finished = new Promise<number>((resolve) => (this.exitWith = resolve))

  /** `database`: the URL serve was given with --database; its engines get it in their environment, never on their argv. */
  constructor(private readonly opts: { database?: string } = {}) {
    // Compiled: argv is [bun, /$bunfs/…, ...args]; from source: [bun, script, ...args].
    const compiled = process.argv[1]?.startsWith('/$bunfs/') ?? false
    this.args = withoutDatabaseArg(compiled ? process.argv.slice(2) : process.argv.slice(1))
  }

  /** Runs engines until stopped; the exit code for `muster serve`. */
  async run(): Promise<number> {
    const onHup = () => void this.swap()
    const onStop = (sig: string) => void this.stop(`${sig}: stopping`)
    process.on('SIGHUP', onHup)
    process.on('SIGTERM', onStop)
    process.on('SIGINT', onStop)
    try {
      const first = this.start(this.binary, 'first')
      this.current = first
      void first.expect('serving', 24 * 3600_000).then(
        (s) => (first.serving = s),
        () => {}, // it exited: handled in start()
      )
      return await this.finished
    } finally {
      process.off('SIGHUP', onHup)
      process.off('SIGTERM', onStop)
      process.off('SIGINT', onStop)
    }
  }

  private start(binary: string, role: 'first' | 'takeover'): Engine {
    const e = new Engine([binary, ...this.args], role, this.opts.database ? { [DATABASE_URL_ENV]: this.opts.database } : {})
    this.engines.add(e)
    void e.exited.then((code) => {
      this.engines.delete(e)
      // The serving engine ended on its own (crash, fatal error): so does serve, and the service manager decides.
      // One that never served (a refused start) said why itself.
      if (e === this.current && !e.leaving && !this.stopping) void this.stop(e.serving ? `engine ${e.pid} exited with code ${code}` : '', code)
    })
    return e
  }

  private async stop(why: string, code = 0): Promise<void> {
    if (this.stopping) return
    this.stopping = true
    if (code !== 0 && why) log.error(why)
    const current = this.current
    for (const e of this.engines) e.kill('SIGTERM')
    const codes = await Promise.all([...this.engines].map((e) => e.exited.then((c) => [e, c] as const)))
    // A stop that was asked for is clean even when an engine was still starting and died of the signal (128+n).
    const last = codes.find(([e]) => e === current)?.[1] ?? 0
    this.exitWith(code || (last >= 128 ? 0 : last))
  }

  /** SIGHUP: one swap at a time; a SIGHUP during one runs another right after it. */
  private async swap(): Promise<void> {
    if (this.stopping) return
    if (this.swapping) {
      this.again = true
      log.info('SIGHUP: an engine swap is under way; another one follows it')
      return
    }
    if (!this.current.serving) {
      log.warn('SIGHUP: the engine is still starting; nothing to replace yet')
      return
    }
    this.swapping = true
    try {
      await this.replace(this.current)
    } catch (e) {
      log.error(`engine swap: ${(e as Error).message}`)
    } finally {
      this.swapping = false
    }
    if (this.again && !this.stopping) {
      this.again = false
      void this.swap()
    }
  }

  private async replace(old: Engine): Promise<void> {
    log.info(`SIGHUP: replacing engine ${old.pid} with ${this.binary}`)
    const t0 = Date.now()
    // 1. the new binary starts; until it does, nothing changes for the old engine
    let next: Engine
    try {
      next = this.start(this.binary, 'takeover')
    } catch (e) {
      log.error(`engine swap failed: cannot run ${this.binary}: ${(e as Error).message}; engine ${old.pid} keeps serving`)
      old.tell({ t: 'reload' })
      return
    }
    try {
      await next.expect('booted', START_WITHIN_MS)
    } catch (e) {
      next.kill()
      log.error(`engine swap failed: ${this.binary} did not start: ${(e as Error).message}; engine ${old.pid} keeps serving`)
      old.tell({ t: 'reload' }) // what a SIGHUP also means: the nodes file, read again by the engine that keeps serving
      return
    }
    log.debug(`engine swap: engine ${next.pid} started in ${Date.now() - t0} ms`)
    // 2. the old engine quiesces
    const heldSince = Date.now()
    old.tell({ t: 'quiesce' })
    let probes: Record<string, ProbeState>
    try {
      probes = (await old.expect('quiesced', QUIESCE_WITHIN_MS)).probes
    } catch (e) {
      next.kill()
      old.tell({ t: 'abort' }) // whatever it holds gets a retryable 503; serve exits and is restarted
      throw new Error(`engine ${old.pid} did not quiesce: ${(e as Error).message}`)
    }
    log.debug(`engine swap: engine ${old.pid} quiesced in ${Date.now() - heldSince} ms`)
    // 3. the new engine takes the ports; failing that, a copy of the old binary does
    let taker: Engine | null = next
    let serving = await this.open(next, old, probes)
    if (!serving) {
      taker = await this.fallback(old)
      serving = taker ? await this.open(taker, old, probes) : null
    }
    if (!taker || !serving) {
      log.error(`engine swap failed and engine ${old.pid} has stopped its services: stopping so the service manager restarts muster`)
      old.tell({ t: 'abort' })
      return
    }
    // 4. the old engine forwards and drains
    old.leaving = true
    this.current = taker
    old.tell({ t: 'release', handover: serving.handover! })
    log.info(`engine swap: engine ${taker.pid} (muster ${serving.version}) serves; new requests waited at most ${Date.now() - heldSince} ms; engine ${old.pid} drains`)
    const code = await old.exited
    log.info(`engine swap complete: engine ${old.pid} drained and exited (${code})`)
    taker.tell({ t: 'predecessor-gone' })
  }

  private async open(engine: Engine, old: Engine, probes: Record<string, ProbeState>): Promise<Serving | null> {
    engine.tell({ t: 'open', apiPort: old.serving!.apiPort, enrollmentPort: old.serving!.enrollmentPort, probes })
    try {
      engine.serving = await engine.expect('serving', OPEN_WITHIN_MS)
      return engine.serving
    } catch (e) {
      log.error(`engine swap: engine ${engine.pid} could not take over: ${(e as Error).message}`)
      engine.kill()
      await engine.exited
      return null
    }
  }

  /** The old engine's own binary image, even when the file on disk was replaced. */
  private async fallback(old: Engine): Promise<Engine | null> {
    log.warn(`engine swap: starting the old engine's binary again (/proc/${old.pid}/exe) to take over`)
    try {
      const e = this.start(`/proc/${old.pid}/exe`, 'takeover')
      await e.expect('booted', START_WITHIN_MS).catch((err) => {
        e.kill()
        throw err
      })
      return e
    } catch (e) {
      log.error(`engine swap: the old binary did not start either: ${(e as Error).message}`)
      return null
    }
  }
}

/**
 * The path serve was started by (argv[0]: /usr/local/bin/muster under systemd), not
 * where a symlink pointed then, so an upgrade that moves a symlink is followed too.
 */
function startedAs(): string {
  const a = process.argv0
  const path = a.includes('/') ? resolve(a) : Bun.which(a)
  return path && existsSync(path) ? path : process.execPath
}

/** `muster serve`: take the lock, run engines, release the lock; the exit code. */
export async function supervise(dataDirPath: string, opts: { database?: string } = {}): Promise<number> {
  const dataDir = new DataDir(dataDirPath)
  dataDir.ensureDir('platform')
  const release = acquireServeLock(dataDir)
  try {
    return await new Supervisor(opts).run()
  } finally {
    release()
  }
}
