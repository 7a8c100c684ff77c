// A rollout for people: its state, progress per group, and the nodes.
import type { RolloutView } from '../../src/wire/rollouts.ts'
import { printLine, printTable } from '../_out.ts'

// Values from outside (a node's error) as one inert line.
const clean = (v: unknown) => String(v ?? '').replace(/[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069\ufeff]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`)

export function showRollout(r: RolloutView, opts: { nodes?: boolean } = {}): void {
  const c = r.counts
  const total = r.total
  printLine(`rollout ${r.id} to ${clean(r.version)}: ${r.state}${r.reason ? ` (${clean(r.reason)})` : ''}`)
  printLine(`  ${c.done} of ${total} done, ${c.downloading + c.installing + c.restarting} in progress (at most ${r.maxUnavailableNodes}), ${c.pending} pending, ${c.failed} failed, ${c['rolled-back']} rolled back, ${c.skipped} skipped`)
  if (r.groups.length > 1) printTable(['group', 'nodes', 'done', 'in progress', 'failed', 'pending'], r.groups.map((g) => [g.group, g.total, g.counts.done, g.counts.downloading + g.counts.installing + g.counts.restarting, g.counts.failed + g.counts['rolled-back'], g.counts.pending]))
  if (opts.nodes !== false && total > 0) {
    printLine()
    printTable(['node', 'state', 'from', 'to', 'canary', 'error'], r.nodes.map((n) => [n.name, n.state, n.from, n.to, n.canary ? 'yes' : '', n.error ? clean(n.error) : '']))
  }
}
