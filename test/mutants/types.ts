// One planted bug: `from` must occur exactly once in `file`; the runner
// (`bun run mutants`) replaces it with `to` in a temporary copy, runs only
// `tests`, and reports the mutant as a survivor when they all still pass.
export interface Mutant {
  /** What guarantee the mutation breaks, in a few words. */
  name: string
  /** Path from the repository root. */
  file: string
  from: string
  to: string
  /**
   * Test files (paths from the root) expected to catch it, run first; e2e tests may need dist/muster, which the
   * runner rebuilds. When they all pass (or none is named), the runner goes on with the test files that can see
   * the bug: those importing `file` at most two imports away, and its area's test folder (test/mutants/select.ts).
   */
  tests?: string[]
  /** Optional `bun test -t` filter for `tests` (the files found after them run whole). */
  filter?: string
  /**
   * The store engines the suites that run on both (describe.each(ENGINES)) use for this entry.
   * Default ['sqlite']: most planted bugs do not depend on the engine, and the run must stay short;
   * name 'postgres' for a bug on a PostgreSQL-only path (locking, LISTEN/NOTIFY, several Platforms).
   */
  engines?: ('sqlite' | 'postgres')[]
  /**
   * Run by `.ci/run` (`bun run mutants --ci`): the bugs the tests issue names and one per guarantee of
   * this round, chosen so the CI run stays within 5 minutes. Every entry runs with `bun run mutants`.
   */
  ci?: boolean
}
