// Runs before every test file: a private HOME and config dir, no inherited
// muster or cloud settings, so tests never touch the operator's files.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

const home = mkdtempSync(join(tmpdir(), 'muster-test-home-'))
process.env.HOME = home
process.env.XDG_CONFIG_HOME = join(home, '.config')
for (const key of Object.keys(process.env)) {
  if (key.startsWith('MUSTER_TEST_')) continue // the test run's own settings (the PostgreSQL that CI started)
  if (/^(MUSTER_|HCLOUD_|HETZNER_|DIGITALOCEAN_|AWS_|AZURE_|ARM_|GOOGLE_|GCP_|CLOUDSDK_)/.test(key)) delete process.env[key]
}
process.env.MUSTER_LOG_LEVEL ??= '1'

// End-to-end tests start real processes: two minutes per test (a loaded 2-core machine is slow).
// Bun 1.4 ignores bunfig's timeout, and setDefaultTimeout here reaches only the FIRST file
// bun loads: `bun run test` (and the mutants runner) pass --timeout 120000 for every file;
// by hand, run `bun test --timeout 120000 A B` when a file after the first is slow.
const { afterAll, setDefaultTimeout } = await import('bun:test')
setDefaultTimeout(120_000)
// The private HOME goes when the run ends (bun test runs no 'exit' handler of a preload).
afterAll(() => rmSync(home, { recursive: true, force: true }))

// Every process this run starts carries its marker (test/helpers/leftovers.ts). A harness (.ci/run, the mutants
// runner) sets it and checks for leftovers itself; a run by hand gets its own, and what outlived its tests
// (replicas of a test that failed before its cleanup) is named and killed when it ends.
if (!process.env.MUSTER_TEST_RUN) {
  const marker = `local-${process.pid}-${Date.now().toString(36)}`
  process.env.MUSTER_TEST_RUN = marker
  afterAll(async () => {
    const { describeLeftovers, sweepMarked } = await import('./helpers/leftovers.ts')
    const left = await sweepMarked(marker, 3_000)
    if (left.length > 0) process.stderr.write(`test run left ${left.length} process(es) behind (killed now):\n${describeLeftovers(left)}\n`)
  })
}
