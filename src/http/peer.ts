// The network address a request came from, remembered by the server that
// accepted it (Bun gives it to the fetch handler, not to the Request).
const peers = new WeakMap<Request, string>()

export function rememberPeer(request: Request, address: string | undefined): void {
  if (address) peers.set(request, address)
}

/** The peer's address, or 'unknown' for a request no server saw (in-process calls, the listener's forwards). */
export function peerAddress(request: Request): string {
  return peers.get(request) ?? 'unknown'
}
