// Planted bugs in what issue 26 added: the heartbeat route's body cache and
// its answer written as text (the tail cached per assignment revision and
// Platforms list), the heartbeat table and its batched flush, the mac kept on
// the node entry, PostgreSQL group commit, and the heartbeat limit flags.
import type { Mutant } from './types.ts'

export default [
  {
    name: 'the cached answer tail is not invalidated when the assignment revision moves',
    ci: true,
    file: 'src/fabric/heartbeat.ts',
    from: 'let tail = byRevision.get(revision)',
    to: 'let tail = byRevision.values().next().value',
    tests: ['test/fabric/heartbeat-answer.test.ts'],
  },
  {
    name: 'the cached answer tail is not invalidated when the Platforms list moves',
    file: 'src/fabric/heartbeat.ts',
    from: 'const key = platforms.length === 0 ? NO_PLATFORMS : platforms',
    to: 'const key = NO_PLATFORMS',
    tests: ['test/fabric/heartbeat-answer.test.ts'],
  },
  {
    name: 'the Platforms list keeps its old identity (and cached answers) after the live Platforms changed',
    file: 'src/ha/platforms.ts',
    from: 'if (c && JSON.stringify(c.list) === JSON.stringify(list)) list = c.list',
    to: 'if (c) list = c.list',
    tests: ['test/ha/followers.test.ts'],
    filter: 'heartbeat answers list only the live Platforms',
    engines: ['postgres'],
  },
  {
    name: 'the body cache answers any text with a body it holds',
    ci: true,
    file: 'src/http/heartbeat.ts',
    from: '    return this.map.get(text)',
    to: '    return this.map.values().next().value',
    tests: ['test/http/heartbeat-route.test.ts'],
  },
  {
    name: 'the batched heartbeat flush loses a row between chunks',
    ci: true,
    file: 'src/store/heartbeats.ts',
    from: 'for (let i = 0; i < sorted.length; i += chunk) {',
    to: 'for (let i = 0; i < sorted.length; i += chunk + 1) {',
    tests: ['test/store/heartbeats.test.ts'],
  },
  {
    name: 'a late heartbeat (another Platform\'s) moves a node\'s time back',
    file: 'src/store/heartbeats.ts',
    from: `    memory_mb = excluded.memory_mb, replicas = excluded.replicas, platform = excluded.platform WHERE node_heartbeats.last_seen_at < excluded.last_seen_at\`
const POSTGRES`,
    to: `    memory_mb = excluded.memory_mb, replicas = excluded.replicas, platform = excluded.platform\`
const POSTGRES`,
    tests: ['test/store/heartbeats.test.ts'],
    filter: 'migration 150',
  },
  {
    name: 'the flush writes a heartbeat for a node that is gone (its chunk fails on the foreign key)',
    file: 'src/store/heartbeats.ts',
    from: 'FROM json_each(?1) AS j WHERE EXISTS (SELECT 1 FROM nodes WHERE nodes.name = j.value ->> 0)',
    to: 'FROM json_each(?1) AS j WHERE true',
    tests: ['test/store/heartbeats.test.ts'],
  },
  {
    name: 'migration 150 leaves the nodes\' last heartbeats behind',
    file: 'src/store/schema/fabric.ts',
    from: 'SELECT name, last_seen_at, version, cpu_millis, memory_mb, replicas FROM nodes WHERE last_seen_at IS NOT NULL;',
    to: 'SELECT name, last_seen_at, version, cpu_millis, memory_mb, replicas FROM nodes WHERE last_seen_at IS NULL;',
    tests: ['test/store/heartbeats.test.ts'],
    filter: 'migration 150',
  },
  {
    name: 'a rebound name keeps the old machine\'s last heartbeat',
    file: 'src/store/nodes.ts',
    from: "if (bound) await db.run('DELETE FROM node_heartbeats WHERE name = ?1', name)",
    to: '',
    tests: ['test/store/heartbeats.test.ts'],
    filter: 'rebound',
  },
  {
    name: 'the mac kept on a node entry is not computed again when its generation moves',
    file: 'src/fabric/heartbeat.ts',
    from: 'if (mac === null || n.macGeneration !== n.generation || n.macCert !== n.certSha256) {',
    to: 'if (mac === null || n.macCert !== n.certSha256) {',
    tests: ['test/fabric/heartbeat-answer.test.ts'],
    filter: 'fast credential check',
  },
  {
    name: 'PostgreSQL group commit: a failed member keeps its writes (no savepoint)',
    ci: true,
    file: 'src/store/sql-postgres.ts',
    from: '.savepoint((sp) => job.fn(new PgDb(sp, true)))',
    to: '.savepoint(() => Promise.resolve()).then(() => job.fn(new PgDb(t as unknown as SQL, true)))',
    tests: ['test/store/db.test.ts'],
    filter: 'started together',
    engines: ['postgres'],
  },
  {
    name: 'PostgreSQL group commit: members are told before the commit',
    file: 'src/store/sql-postgres.ts',
    from: '            kept.push({ job, value })',
    to: '            job.resolve(value)\n            kept.push({ job, value })',
    tests: ['test/store/db.test.ts'],
    filter: 'started together',
    engines: ['postgres'],
  },
  {
    name: 'PostgreSQL group commit never groups (each grouped transaction commits alone)',
    file: 'src/store/sql-postgres.ts',
    from: '    if (!opts?.group) return super.tx(fn)',
    to: '    return super.tx(fn)',
    tests: ['test/store/db.test.ts'],
    filter: 'started together',
    engines: ['postgres'],
  },
  {
    name: 'serve --heartbeat-rate is ignored',
    file: 'src/fabric/fabric.ts',
    from: 'heartbeatLimit: o.heartbeatLimit ?? DEFAULT_LIMITS.heartbeat,',
    to: 'heartbeatLimit: DEFAULT_LIMITS.heartbeat,',
    tests: ['test/e2e/heartbeat-limits.test.ts'],
  },
] satisfies Mutant[]
