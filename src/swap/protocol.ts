// The messages between `muster serve` (the supervisor) and its engines, over
// the IPC channel Bun.spawn opens (JSON). The order is in src/swap/supervisor.ts.
import type { TunableName } from '../tunables.ts'

/** A node's last readiness probe: in memory only, so the old engine hands it over. */
export interface ProbeState {
  ok: boolean
  at: number
  reason?: string
}

export type ToSupervisor =
  /** A replacement engine started and waits for `open`. */
  | { t: 'booted'; version: string }
  /** The engine serves both ports (the replacement: steered to itself). */
  | { t: 'serving'; apiPort: number; enrollmentPort: number | null; handover: string | null; version: string }
  /** The old engine holds new requests, finished the others, stopped its services and flushed heartbeats. */
  | { t: 'quiesced'; probes: Record<string, ProbeState>; held: boolean }
  /** The replacement could not open the store or take the ports. */
  | { t: 'failed'; message: string }

export type ToEngine =
  | { t: 'open'; apiPort: number; enrollmentPort: number | null; probes: Record<string, ProbeState> }
  | { t: 'quiesce' }
  /** Forward everything to the engine on this socket, drain, exit. */
  | { t: 'release'; handover: string }
  /** The swap failed for good: stop (exit 1) so the service manager restarts muster. */
  | { t: 'abort' }
  /** The old engine is gone: the handover socket can close. */
  | { t: 'predecessor-gone' }
  /** A SIGHUP whose new engine did not start: this engine reads --nodes-file again itself. */
  | { t: 'reload' }

/** Set in an engine's environment by the supervisor: `first`, or `takeover` for a replacement. */
export const ENGINE_ENV: TunableName = 'MUSTER_SERVE_ENGINE'
