// How long the Agent waits between heartbeats that failed (docs/operations.md).

/**
 * The longest wait between reconnects after failed heartbeats (docs/operations.md):
 * with jitter the wait is at most this, so an Agent heartbeats within 10 s of
 * its Platform's return.
 */
export const RECONNECT_CAP_MS = 8_000

/** The wait before heartbeat attempt `failures + 1`: doubling from min(interval, 1 s), at most RECONNECT_CAP_MS, jittered down by up to half. */
export function reconnectDelayMs(failures: number, heartbeatMs: number, random: () => number = Math.random): number {
  const base = Math.min(heartbeatMs, 1000)
  const ceiling = Math.min(RECONNECT_CAP_MS, base * 2 ** Math.min(Math.max(failures - 1, 0), 16))
  return Math.round(ceiling * (0.5 + random() / 2))
}
