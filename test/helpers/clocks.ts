// The injected clock of each in-process Platform, by URL: helpers that sign
// with a time (proofs of possession) use the clock the Platform checks against.
const clocks = new Map<string, () => number>()

export function registerClock(url: string, now: () => number): void {
  clocks.set(url.replace(/\/+$/, ''), now)
}

/** The Platform's clock at `url`, else the wall clock. */
export function clockFor(url: string): number {
  return (clocks.get(url.replace(/\/+$/, '')) ?? Date.now)()
}
