// The network address a request came from, remembered by the server that
// accepted it (Bun gives it to the fetch handler, not to the Request).
// The address is looked up only when asked for (asking the server costs more than the rest of a heartbeat).
const peers = new WeakMap<Request, string | (() => string | undefined)>()

export function rememberPeer(request: Request, address: string | undefined | (() => string | undefined)): void {
  if (address) peers.set(request, address)
}

/** The peer's address, or 'unknown' for a request no server saw (in-process calls, the listener's forwards). */
export function peerAddress(request: Request): string {
  const a = peers.get(request)
  return (typeof a === 'function' ? a() : a) ?? 'unknown'
}
