// A rollout for people: its state, progress per group, and the nodes. Every
// value from outside (a version, a reason, a node's error) is escaped by
// commands/_out.ts: `esc` in lines, `printTable` in cells.
import type { RolloutView } from '../../src/wire/rollouts.ts'
import { esc, printLine, printTable } from '../_out.ts'

export function showRollout(r: RolloutView, opts: { nodes?: boolean } = {}): void {
  const c = r.counts
  const total = r.total
  printLine(esc`rollout ${r.id} to ${r.version}: ${r.state}${r.reason ? ` (${r.reason})` : ''}`)
  printLine(esc`  ${c.done} of ${total} done, ${c.downloading + c.installing + c.restarting} in progress (at most ${r.maxUnavailableNodes}), ${c.pending} pending, ${c.failed} failed, ${c['rolled-back']} rolled back, ${c.skipped} skipped`)
  if (r.groups.length > 1) printTable(['group', 'nodes', 'done', 'in progress', 'failed', 'pending'], r.groups.map((g) => [g.group, g.total, g.counts.done, g.counts.downloading + g.counts.installing + g.counts.restarting, g.counts.failed + g.counts['rolled-back'], g.counts.pending]))
  if (opts.nodes !== false && total > 0) {
    printLine()
    printTable(['node', 'state', 'from', 'to', 'canary', 'error'], r.nodes.map((n) => [n.name, n.state, n.from, n.to, n.canary ? 'yes' : '', n.error]))
  }
}
