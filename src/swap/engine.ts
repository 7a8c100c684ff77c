// The engine's side of a swap (docs/nodes.md): the old engine quiesces and then
// drains toward the new one; the new one takes the ports and serves what the
// old one forwards until the old one is gone.
//
// Why nothing is dropped, port by port (both ports listen with SO_REUSEPORT):
//  - A new connection lands in the accept queue of one listener of the group.
//    Closing a listener resets whatever is still in its queue, and a plain
//    reuseport swap cannot know its queue stays empty: the kernel keeps
//    hashing new connections to it until the moment it closes.
//  - So the new engine, right after binding, attaches a BPF program to the
//    group that sends every new connection to its own listener (steer.ts).
//    From then on the old listener's queue can only receive the handshakes
//    that were already half done; the old engine waits until every one of
//    those has finished or expired and its queue is empty (read from /proc,
//    sockets.ts), and only then closes it. Nothing can be in it to reset.
//  - The connections the old engine already holds are not cut: the requests
//    on them are forwarded to the new engine (gate.ts) and answered with
//    `Connection: close`, so each client's next request opens a connection
//    that the new listener accepts. A connection idle for the whole linger
//    (30 s) is closed then, as the idle timeout would.
//  - Consistency: the new engine loads the store only after the old one held
//    new requests, finished the ones inside, stopped its loops and flushed
//    its heartbeats; so one engine at a time runs the background loops and
//    no write is lost between them. Held requests wait (they do not fail)
//    until the new engine serves, then are forwarded.
import { existsSync, mkdtempSync, readdirSync, rmSync, unlinkSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Server } from 'bun'
import { log } from '../log.ts'
import type { DataDir } from '../datadir.ts'
import type { Fabric } from '../fabric/fabric.ts'
import type { EnrollmentListener } from '../listener/listener.ts'
import type { Projects } from '../projects/service.ts'
import type { RequestGate } from './gate.ts'
import type { ProbeState, ToEngine, ToSupervisor } from './protocol.ts'
import { socketCallsAvailable } from '../sockets/libc.ts'
import { ownConnections, untilListenersDrained } from '../sockets/sockets.ts'
import { PEER_HEADER } from './gate.ts'
import { rememberPeer } from '../http/peer.ts'
import { tunableNumber } from '../tunables.ts'

/** What a swap needs of the engine's Platform (src/platform/platform.ts is one). */
export interface Platform {
  readonly gate: RequestGate
  /** Set while the swap runs: the local node's replicas run on, for the next engine to adopt. */
  swapping: boolean
  readonly projects: Pick<Projects, 'stop'>
  readonly fabric: Pick<Fabric, 'registry'>
  readonly listener: Pick<EnrollmentListener, 'drain'> | undefined
  readonly apiPort: number | undefined
  readonly dataDir: DataDir
  stopServices(): Promise<void>
  stopApi(): Promise<void>
  handle(req: Request): Promise<Response>
}

const QUIESCE_WAIT_MS = 30_000
/** Half-done handshakes can take up to ~63 s of SYN-ACK retries. */
const LISTENER_DRAIN_MS = 75_000

function lingerMs(): number {
  return tunableNumber('MUSTER_SWAP_LINGER_SECONDS') * 1000
}

/** The IPC channel to the supervisor. */
export class SupervisorLink {
  private readonly queue: (ToEngine | null)[] = []
  private waiter: ((m: ToEngine | null) => void) | undefined

  constructor() {
    process.on('message', (m) => this.push(m as ToEngine))
    // The supervisor went away (killed): this engine stops too.
    process.on('disconnect', () => this.push(null))
  }

  tell(m: ToSupervisor): void {
    process.send?.(m)
  }

  /** The next message; null when the supervisor is gone. */
  next(): Promise<ToEngine | null> {
    const m = this.queue.shift()
    if (m !== undefined) return Promise.resolve(m)
    return new Promise((resolve) => (this.waiter = resolve))
  }

  private push(m: ToEngine | null): void {
    const w = this.waiter
    this.waiter = undefined
    if (w) w(m)
    else this.queue.push(m)
  }
}

/** Old engine, step 1: hold new requests, answer long polls, let the rest finish, stop the services. */
export async function quiesce(platform: Platform): Promise<{ probes: Record<string, ProbeState>; held: boolean }> {
  platform.gate.hold()
  platform.swapping = true // the local node's replicas run on; the next engine adopts them
  void platform.projects?.stop() // long polls answer now with what they have; the Agent asks again
  const idle = await platform.gate.idle(QUIESCE_WAIT_MS)
  if (!idle) log.warn(`engine swap: requests still running after ${QUIESCE_WAIT_MS / 1000}s; stopping the services anyway`)
  const probes: Record<string, ProbeState> = {}
  for (const n of platform.fabric?.registry.nodes.values() ?? []) if (n.probe) probes[n.name] = { ...n.probe }
  await platform.stopServices() // loops stop, heartbeats are flushed (registry.stop), the store closes
  return { probes, held: true }
}

/** Old engine, step 2: forward to the new engine, drain both ports, close them. */
export async function handOver(platform: Platform, socket: string): Promise<void> {
  platform.gate.forwardTo(socket)
  await socketCallsAvailable()
  const linger = lingerMs()
  await Promise.all([drainApi(platform, linger), platform.listener?.drain(LISTENER_DRAIN_MS + linger)])
}

async function drainApi(platform: Platform, linger: number): Promise<void> {
  const port = platform.apiPort
  if (port === undefined) return
  if (!(await untilListenersDrained(port, LISTENER_DRAIN_MS))) log.warn('engine swap: the API port did not drain in time; closing it anyway')
  // Keep-alive connections: their next request is forwarded and closes them; give their clients the linger to send it.
  const until = Date.now() + linger
  while (ownConnections(port) > 0 && Date.now() < until) await Bun.sleep(250)
  log.debug(`engine swap: API port drained (${ownConnections(port)} connection(s) left)`)
  await platform.stopApi()
}

/** New engine: the seed of the probe results the old engine had (a node stays ready across the swap). */
export function seedProbes(platform: Platform, probes: Record<string, ProbeState>): void {
  for (const [name, probe] of Object.entries(probes)) {
    const n = platform.fabric.registry.get(name)
    if (n && !n.probe) n.probe = probe
  }
}

/** Handover sockets left by engines that died (their pid is gone). */
function removeStaleSockets(platform: Platform): void {
  const dir = platform.dataDir.path('platform')
  for (const name of readdirSync(dir)) {
    const pid = Number(/^handover-(\d+)\.sock$/.exec(name)?.[1])
    if (!pid || pid === process.pid) continue
    try {
      process.kill(pid, 0)
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ESRCH') rmSync(join(dir, name), { force: true })
    }
  }
}

/** New engine: a unix socket only this account can reach, where the old engine forwards what it still receives. */
export function startHandoverServer(platform: Platform): { path: string; stop(): void } {
  let dir: string | undefined
  let path = platform.dataDir.path(`platform/handover-${process.pid}.sock`)
  if (path.length > 100) {
    dir = mkdtempSync(join(tmpdir(), 'muster-handover-'))
    path = join(dir, 's')
  }
  removeStaleSockets(platform)
  if (existsSync(path)) unlinkSync(path)
  // idleTimeout as on the API port: a forwarded long poll is held for up to a minute (the types omit it for unix sockets).
  // Only the old engine reaches this socket: the client's address it sends along is the one the API port saw.
  const fetch = (req: Request) => {
    const peer = req.headers.get(PEER_HEADER)
    if (peer && peer !== 'unknown') rememberPeer(req, peer)
    return platform.handle(req)
  }
  const options = { unix: path, maxRequestBodySize: 1024 * 1024, idleTimeout: 120, fetch }
  const server: Server<unknown> = Bun.serve(options as unknown as Parameters<typeof Bun.serve>[0])
  return {
    path,
    stop() {
      void server.stop(false)
      try {
        if (dir) rmSync(dir, { recursive: true, force: true })
        else unlinkSync(path)
      } catch {}
    },
  }
}
