// What a Platform's services may use, and nothing more: the store, the clock,
// the data directory, the Platform's own secrets, the master key, change
// notices shared between Platforms, the leases that give each background loop
// one holder among them, and a place to register shutdown work.
// platform.ts composes the services on this; no service imports platform.ts.
import type { Changes } from './changes.ts'
import type { DataDir } from '../datadir.ts'
import type { Leases } from './leases.ts'
import type { PlatformMetrics } from '../metrics/platform.ts'
import type { Store } from '../store/db.ts'
import type { Vault } from './vault.ts'

export interface Context {
  readonly store: Store
  /** Milliseconds since the epoch; injectable so tests can move time. */
  readonly now: () => number
  readonly dataDir: DataDir
  readonly vault: Vault
  readonly masterKey: Uint8Array
  readonly changes: Changes
  /** One holder per background loop among the Platforms on the store (src/context/leases.ts). */
  readonly leases: Leases
  /** This Platform's metric families (GET /metrics): count here, one line where it happens. */
  readonly metrics: PlatformMetrics
  /** Registers something to stop when the Platform closes (run in reverse order). */
  onClose(fn: () => void | Promise<void>): void
}
