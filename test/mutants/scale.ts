// Planted bugs in what issue 16 added: the heartbeat's dedicated route (its
// credential check and its hand-written Register rules), the batched
// heartbeat write, the Agent's fetch-on-change, and the paged listings.
import type { Mutant } from './types.ts'

export default [
  {
    name: 'the fast credential check accepts any mac',
    ci: true,
    file: 'src/fabric/heartbeat.ts',
    from: 'return diff === 0 && shape === 0 ? n : undefined',
    to: 'return n',
    tests: ['test/http/heartbeat-route.test.ts'],
  },
  {
    name: 'the fast path takes a revoked node, or another generation with the current mac',
    file: 'src/fabric/heartbeat.ts',
    from: 'n.certSha256 === null || n.revokedAt !== null || n.generation !== generation',
    to: 'n.certSha256 === null',
    tests: ['test/http/heartbeat-route.test.ts'],
  },
  {
    name: 'the hand check lets a replica list past 10,000 through',
    file: 'src/http/heartbeat.ts',
    from: 'if (rs.length > 10_000)',
    to: 'if (rs.length > 10_001)',
    tests: ['test/http/heartbeat-route.test.ts'],
  },
  {
    name: 'the batched heartbeat write stores the version as the time',
    file: 'src/store/heartbeats.ts',
    from: 'UPDATE nodes SET last_seen_at = j.value ->> 1,',
    to: 'UPDATE nodes SET last_seen_at = j.value ->> 2,',
    tests: ['test/store/heartbeats.test.ts'],
    filter: 'sqlite',
  },
  {
    name: 'the Agent fetches its assignments on every heartbeat',
    file: 'src/agent/workloads.ts',
    from: 'else if (!applied ? r > 0 : r > revision) sync()',
    to: 'else sync()',
    tests: ['test/agent/workloads.test.ts'],
  },
  {
    name: 'a page starts at its cursor instead of after it (an item twice)',
    file: 'src/http/paging.ts',
    from: 'if (keys[mid]! <= key) lo = mid + 1',
    to: 'if (keys[mid]! < key) lo = mid + 1',
    tests: ['test/fabric/listing.test.ts'],
    filter: 'sqlite',
  },
  {
    name: 'the state filter is ignored',
    file: 'src/fabric/listing.ts',
    from: 'if (q.state !== undefined && st.state !== q.state) continue',
    to: 'if (q.state === "x") continue',
    tests: ['test/fabric/listing.test.ts'],
    filter: 'sqlite',
  },
  {
    name: 'the heartbeat route reads a join token as a credential (main refuses it on every route)',
    file: 'src/http/heartbeat.ts',
    from: 'if (joinToken) return errorResponse(joinToken)',
    to: 'void joinToken',
    tests: ['test/http/heartbeat-route.test.ts'],
  },
  {
    name: "the heartbeat answer ignores the nodes file's drain",
    file: 'src/fabric/heartbeat.ts',
    from: 'const drained = fabric.declared.get(n.name)?.drained ?? n.drained',
    to: 'const drained = n.drained',
    tests: ['test/fabric/declared.test.ts'],
    filter: 'sqlite',
  },
  {
    name: "the listing's label filter uses what the node reported, not the nodes file's labels",
    file: 'src/fabric/listing.ts',
    from: 'const labelsOf = (n: NodeEntry): Labels => fabric.declared.get(n.name)?.labels ?? n.labels',
    to: 'const labelsOf = (n: NodeEntry): Labels => n.labels',
    tests: ['test/fabric/declared.test.ts'],
    filter: 'sqlite',
  },
  {
    name: 'the label filter is ignored',
    file: 'src/fabric/listing.ts',
    from: '(q.label === undefined || labels?.[q.label.key] === q.label.value)',
    to: 'true',
    tests: ['test/fabric/listing.test.ts'],
    filter: 'sqlite',
  },
] satisfies Mutant[]
