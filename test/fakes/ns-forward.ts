// How a fake cloud machine in its own network namespace reaches the Platform
// on this machine's 127.0.0.1 without any network link between them: a TCP
// listener inside the namespace hands each connection to a Unix socket (a file,
// which namespaces share), and the test process relays that socket to the
// Platform's port. The machine sees the Platform at the very URL its first-boot
// data names (https://127.0.0.1:PORT). No packet leaves either namespace.
import type { Socket } from 'bun'

interface Side {
  peer?: Socket<Side>
  pending: Uint8Array[]
  closed: boolean
}

function flush(to: Socket<Side>, from: Side): void {
  while (from.pending.length > 0) {
    const chunk = from.pending[0]!
    const n = to.write(chunk)
    if (n < chunk.length) {
      from.pending[0] = chunk.subarray(Math.max(n, 0))
      return
    }
    from.pending.shift()
  }
  if (from.closed) to.end()
}

/** Socket handlers that relay to the peer `connect` opens, with backpressure (data waits for drain). */
function relay(connect: (self: Socket<Side>) => Promise<Socket<Side>>) {
  return {
    open(s: Socket<Side>) {
      s.data = { pending: [], closed: false }
      connect(s).then(
        (peer) => {
          s.data.peer = peer
          peer.data.peer = s
          flush(peer, s.data)
        },
        () => s.end(),
      )
    },
    data(s: Socket<Side>, chunk: Uint8Array) {
      s.data.pending.push(new Uint8Array(chunk))
      if (s.data.peer) flush(s.data.peer, s.data)
    },
    drain(s: Socket<Side>) {
      // s can take more: flush what its peer had queued for it
      const peer = s.data.peer
      if (peer) flush(s, peer.data)
    },
    close(s: Socket<Side>) {
      s.data.closed = true
      if (s.data.peer && s.data.pending.length === 0) s.data.peer.end()
    },
    error(s: Socket<Side>) {
      s.data.peer?.end()
    },
  }
}

const peerHandlers = (self: Socket<Side>) => ({
  open(p: Socket<Side>) {
    p.data = { peer: self, pending: [], closed: false }
  },
  data(p: Socket<Side>, chunk: Uint8Array) {
    p.data.pending.push(new Uint8Array(chunk))
    flush(self, p.data)
  },
  drain(p: Socket<Side>) {
    flush(p, self.data)
  },
  close(p: Socket<Side>) {
    p.data.closed = true
    if (p.data.pending.length === 0) self.end()
  },
  error() {
    self.end()
  },
})

/** In the test process: the Unix socket `path` relays to 127.0.0.1:`port`. */
export function relayUnixToTcp(path: string, port: number) {
  return Bun.listen<Side>({ unix: path, socket: relay((self) => Bun.connect<Side>({ hostname: '127.0.0.1', port, socket: peerHandlers(self) })) })
}

/** In the test process: HOST:PORT relays to the Unix socket `path` (the Platform probing an Agent in a namespace). */
export function relayTcpToUnix(host: string, port: number, path: string) {
  return Bun.listen<Side>({ hostname: host, port, socket: relay((self) => Bun.connect<Side>({ unix: path, socket: peerHandlers(self) })) })
}

// In the namespace: `bun test/fakes/ns-forward.ts HOST:PORT=SOCKET … unix:SOCKET=HOST:PORT …`: each HOST:PORT
// listened on relays to its socket; each `unix:` socket listened on relays to HOST:PORT there.
if (import.meta.main) {
  for (const spec of process.argv.slice(2)) {
    const [from, to] = spec.split('=') as [string, string]
    if (from.startsWith('unix:')) {
      const i = to.lastIndexOf(':')
      Bun.listen<Side>({ unix: from.slice(5), socket: relay((self) => Bun.connect<Side>({ hostname: to.slice(0, i), port: Number(to.slice(i + 1)), socket: peerHandlers(self) })) })
      continue
    }
    const i = from.lastIndexOf(':')
    Bun.listen<Side>({ hostname: from.slice(0, i), port: Number(from.slice(i + 1)), socket: relay((self) => Bun.connect<Side>({ unix: to, socket: peerHandlers(self) })) })
  }
  process.stdout.write(`relaying ${process.argv.slice(2).join(' ')}\n`)
}
