// Lists (and with --kill ends) the processes a test run left behind, by the
// run's marker (test/helpers/leftovers.ts): `bun run .ci/leftovers.ts MARKER
// [--kill] [--grace-ms N]`. Waits up to N ms (default 5000) for them to end by
// themselves; exits 1 when any is left, naming each.
import { describeLeftovers, markedProcesses, sweepMarked } from '../test/helpers/leftovers.ts'

const [marker, ...rest] = process.argv.slice(2)
if (!marker) {
  process.stderr.write('usage: bun run .ci/leftovers.ts MARKER [--kill] [--grace-ms N]\n')
  process.exit(2)
}
const kill = rest.includes('--kill')
const at = rest.indexOf('--grace-ms')
const graceMs = at >= 0 ? Number(rest[at + 1]) : 5000
let left = kill ? await sweepMarked(marker, graceMs) : markedProcesses(marker)
if (!kill && left.length > 0) {
  const deadline = Date.now() + graceMs
  while (left.length > 0 && Date.now() < deadline) {
    await Bun.sleep(100)
    left = markedProcesses(marker)
  }
}
if (left.length === 0) process.exit(0)
process.stderr.write(`${left.length} process(es) of test run ${marker} outlived it${kill ? ' (killed now)' : ''}:\n${describeLeftovers(left)}\n`)
process.exit(1)
