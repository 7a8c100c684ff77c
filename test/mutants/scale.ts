// Planted bugs in the paths made for scale: the heartbeat's dedicated route (its
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
    from: '!n.hasCert || n.revokedAt !== null || n.generation !== generation',
    to: '!n.hasCert',
    tests: ['test/http/heartbeat-route.test.ts'],
  },
  {
    // (The hand-written Register check this entry planted a bug in is gone: the route checks
    // bodies with the schema and keeps those it accepted. The same bug, on the path that replaced it.)
    name: 'the dedicated route keeps a body the schema refused, and takes it from its cache the next time',
    file: 'src/http/heartbeat.ts',
    from: "if ('error' in parsed) return errorResponse(parsed.error)",
    to: "if ('error' in parsed) { try { bodies.set(text, JSON.parse(text)) } catch {} return errorResponse(parsed.error) }",
    tests: ['test/http/heartbeat-route.test.ts'],
  },
  {
    name: 'the batched heartbeat write stores the version as the time',
    file: 'src/store/heartbeats.ts',
    from: 'SELECT j.value ->> 0, j.value ->> 1, j.value ->> 2,',
    to: 'SELECT j.value ->> 0, j.value ->> 2, j.value ->> 2,',
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
    file: 'src/wire/paging.ts',
    from: 'if (keys.at(mid)! <= key) lo = mid + 1',
    to: 'if (keys.at(mid)! < key) lo = mid + 1',
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
    from: 'const drainedOf = (fabric: Fabric, n: NodeEntry): boolean => fabric.declared.get(n.name)?.drained ?? n.drained',
    to: 'const drainedOf = (fabric: Fabric, n: NodeEntry): boolean => n.drained',
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
  {
    name: 'group commit: a failed transaction keeps its writes (no rollback to its savepoint)',
    ci: true,
    file: 'src/store/sql.ts',
    from: "exec('ROLLBACK TO muster_group')",
    to: '',
    tests: ['test/store/db.test.ts'],
    filter: 'started together',
  },
  {
    name: 'group commit: callers are told before the commit',
    file: 'src/store/sql.ts',
    from: "          exec('RELEASE muster_group')\n          kept.push({ job, value })",
    to: "          exec('RELEASE muster_group')\n          job.resolve(value)\n          kept.push({ job, value })",
    tests: ['test/store/db.test.ts'],
    filter: 'started together',
  },
] satisfies Mutant[]
