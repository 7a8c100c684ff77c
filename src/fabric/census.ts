// The fleet as the metrics show it (docs/monitoring.md): nodes by state, by
// compatibility and by heartbeat age, counted in the passes over the registry
// that count nodes by state for the listings (Registry.stateCounts: on every
// call below 50,000 nodes; above, states are kept as nodes move and a full
// pass runs in slices every few seconds). A scrape reads the last pass and
// never walks a million nodes itself.
import { AGE_BUCKETS, type FleetCensus } from '../metrics/platform.ts'

export type { FleetCensus }
type State = keyof FleetCensus['states']
type Compatibility = keyof FleetCensus['compatibility']
type Pass = FleetCensus & { states: FleetCensus['states'] & { total: number } }

export class CensusCount {
  /** The last full pass. */
  last: Pass | null = null
  /** Compatibility by version text (versions are few; parsing one costs more than a look-up). */
  private readonly byVersion = new Map<string | null, Compatibility>()

  constructor(
    private readonly compatibilityOf: (version: string | null) => Compatibility,
    /** The registry's counts by state (they start a pass when one is due). */
    private readonly stateCounts: () => Pass['states'],
  ) {}

  /** Nodes by state as kept now; by compatibility and heartbeat age as of the last pass. */
  read(): FleetCensus {
    const states = this.stateCounts()
    return { ...this.last!, states }
  }

  start(): Pass {
    return { states: { total: 0, enrolled: 0, ready: 0, unreachable: 0, revoked: 0 }, compatibility: { current: 0, behind: 0, newer: 0, unknown: 0 }, ages: AGE_BUCKETS.map(() => 0), never: 0 }
  }

  /** One node of a pass: its version, its last heartbeat and its state (the registry's columns, src/fabric/node-table.ts). */
  add(c: Pass, version: string | null, lastSeenAt: number | null, state: State, now: number): void {
    c.states.total++
    c.states[state]++
    let compat = this.byVersion.get(version)
    if (compat === undefined) {
      compat = this.compatibilityOf(version)
      if (this.byVersion.size < 10_000) this.byVersion.set(version, compat)
    }
    c.compatibility[compat]++
    if (lastSeenAt === null) {
      c.never++
      return
    }
    const age = (now - lastSeenAt) / 1000
    let b = 0
    while (age > AGE_BUCKETS[b]!.upTo) b++
    ;(c.ages as number[])[b]!++
  }
}
