// What the kernel says about this process's sockets on a port, for an engine
// swap: our listeners and their accept queues, half-done handshakes, and the
// connections we still hold. Our own sockets are found through /proc/self/fd
// and asked directly (libc.ts); only half-done handshakes need /proc/net/tcp,
// read asynchronously, since that table can hold many thousands of lines.
import { readdirSync, readlinkSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import { acceptQueueOf, isListening, localPortOf } from './libc.ts'

const TCP_SYN_RECV = 0x03

/** Every socket fd this process holds. */
function ownSocketFds(): number[] {
  let names: string[] = []
  try {
    names = readdirSync('/proc/self/fd')
  } catch {
    return []
  }
  const fds: number[] = []
  for (const name of names) {
    try {
      if (readlinkSync(`/proc/self/fd/${name}`).startsWith('socket:')) fds.push(Number(name))
    } catch {} // closed while we looked
  }
  return fds
}

/** Our listening sockets on `port`. */
export function ownListenerFds(port: number): number[] {
  return ownSocketFds().filter((fd) => localPortOf(fd) === port && isListening(fd))
}

/** Connections on `port` we accepted and still hold. */
export function ownConnections(port: number): number {
  return ownSocketFds().filter((fd) => localPortOf(fd) === port && !isListening(fd)).length
}

/**
 * Handshakes to `port` the kernel has half done (SYN received, final ACK not
 * yet): for any listener of the port, since the table does not say whose.
 * "  sl: LOCAL REMOTE ST ..." with LOCAL and REMOTE 13 (IPv4) or 37 (IPv6) wide.
 */
export async function pendingHandshakes(port: number): Promise<Set<string>> {
  const out = new Set<string>()
  for (const [file, width] of [
    ['/proc/net/tcp', 13],
    ['/proc/net/tcp6', 37],
  ] as const) {
    const text = await readFile(file, 'utf8').catch(() => '')
    for (let at = text.indexOf('\n') + 1; at > 0 && at < text.length; ) {
      const end = text.indexOf('\n', at)
      const colon = text.indexOf(': ', at)
      const local = colon + 2
      const st = local + 2 * width + 2
      if (colon > 0 && (end < 0 || st + 2 <= end) && Number.parseInt(text.slice(st, st + 2), 16) === TCP_SYN_RECV && Number.parseInt(text.slice(local + width - 4, local + width), 16) === port) {
        out.add(text.slice(local, st - 1))
      }
      at = end < 0 ? -1 : end + 1
    }
  }
  return out
}

/**
 * Waits until closing our listeners on `port` can reset nothing: every
 * handshake that was half done when we started (it may be ours) has finished
 * or expired, and after that our accept queues are empty. The caller must
 * already have steered new connections elsewhere, so nothing can join our
 * queues afterwards. `fds`: only these of our listeners (default: all of
 * them on the port). Resolves false when `deadlineMs` passed first (or when
 * the queues cannot be read, after that long).
 */
export async function untilListenersDrained(port: number, deadlineMs: number, fds = ownListenerFds(port)): Promise<boolean> {
  let halfDone = await pendingHandshakes(port)
  const until = Date.now() + deadlineMs
  for (;;) {
    // Order matters: first no old handshake can still complete into our queue, then the queue is empty.
    if (halfDone.size > 0) {
      const now = await pendingHandshakes(port)
      halfDone = new Set([...halfDone].filter((k) => now.has(k)))
    }
    const queued = halfDone.size > 0 ? 1 : fds.reduce((n, fd) => n + (acceptQueueOf(fd) ?? 1), 0)
    if (queued === 0) return true
    if (Date.now() > until) return false
    await Bun.sleep(halfDone.size > 0 ? 50 : 10)
  }
}
