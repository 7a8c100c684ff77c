// The injected clock of each in-process Platform, by URL: helpers that sign
// with a time (proofs of possession) use the clock the Platform checks against.
const clocks = new Map<string, () => number>()

export function registerClock(url: string, now: () => number): void {
  clocks.set(url.replace(/\/+$/, ''), now)
}

/** Forgets the clock when its Platform closes: a later server on the same port (a binary) runs on the wall clock. */
export function unregisterClock(url: string, now: () => number): void {
  const key = url.replace(/\/+$/, '')
  if (clocks.get(key) === now) clocks.delete(key)
}

/** The Platform's clock at `url`, else the wall clock. */
export function clockFor(url: string): number {
  return (clocks.get(url.replace(/\/+$/, '')) ?? Date.now)()
}
