// Planted bugs in round four's scale work: the registry in columns (a revoke,
// a rebind and a rotation reach the heartbeat's fast path at once; a rebound
// name is a new slot; the flush writes every chunk; probes see nodes that
// come with an address), the heartbeat's credential check and its request
// gate door, the enroll's one read and one write, and the event-loop lag
// the benchmarks print.
import type { Mutant } from './types.ts'

export default [
  {
    name: 'a revoke (or any change to a node the store gives back) is not written into the registry\'s columns: the fast path takes a revoked credential',
    ci: true,
    file: 'src/fabric/registry.ts',
    from: '      if (same) t.write(s, fresh, row.labels)\n',
    to: '',
    tests: ['test/fabric/registry-columns.test.ts'],
    filter: 'refused at the next heartbeat',
  },
  {
    name: 'a certificate written in place keeps the mac computed for the old one',
    file: 'src/fabric/node-table.ts',
    from: '    this.flags[s]! &= ~MAC_SET // a mac is for one certificate\n',
    to: '',
    tests: ['test/fabric/heartbeat-answer.test.ts'],
    filter: 'fast credential check',
  },
  {
    name: 'a name rebound to a new machine is written over the old machine\'s slot (a view of the old one reads the new)',
    file: 'src/fabric/registry.ts',
    from: '      const s = same ? had : t.add(fresh, row.labels)\n      if (same) t.write(s, fresh, row.labels)',
    to: '      const s = had >= 0 ? had : t.add(fresh, row.labels)\n      if (had >= 0) t.write(s, fresh, row.labels)',
    tests: ['test/fabric/registry-columns.test.ts'],
    filter: 'new slot',
  },
  {
    name: 'the registry\'s flush skips a node at every chunk boundary',
    ci: true,
    file: 'src/fabric/registry.ts',
    from: 'for (let i = 0; i < names.length; i += HEARTBEAT_CHUNK) {',
    to: 'for (let i = 0; i < names.length; i += HEARTBEAT_CHUNK + 1) {',
    tests: ['test/fabric/registry-columns.test.ts'],
    filter: 'flush writes every node',
  },
  {
    name: 'a node that enrolls with an address after the Platform started is never among the probes\' candidates',
    file: 'src/fabric/registry.ts',
    from: '      if (fresh.url) this.addressed.add(name)\n',
    to: '',
    tests: ['test/fabric/registry-columns.test.ts'],
    filter: 'probed again each interval',
  },
  {
    name: 'the fast path takes a heartbeat whose body names another node (the general path refuses it)',
    file: 'src/fabric/heartbeat.ts',
    from: "  if (nodeId !== undefined && nodeId !== '' && nodeId !== n.name) return undefined\n",
    to: '',
    tests: ['test/http/heartbeat-route.test.ts'],
  },
  {
    name: 'the heartbeat route never leaves the request gate (an engine swap waits for it for ever)',
    file: 'src/http/heartbeat.ts',
    from: '    } finally {\n      done?.()\n    }',
    to: '    } finally {\n    }',
    tests: ['test/swap/gate-enter.test.ts'],
  },
  {
    name: 'PostgreSQL: an enroll that loses its name or certificate to another still spends the token\'s use',
    ci: true,
    file: 'src/store/enroll-rows.ts',
    from: 'UPDATE join_tokens SET uses = uses + 1 WHERE id = $1 AND EXISTS (SELECT 1 FROM ins) RETURNING uses',
    to: 'UPDATE join_tokens SET uses = uses + 1 WHERE id = $1 RETURNING uses',
    tests: ['test/store/enroll-rows.test.ts', 'test/fabric/enroll-race.test.ts'],
    engines: ['postgres'],
  },
  {
    name: 'PostgreSQL: racing enrolls exceed the token\'s uses (its row is not checked for a use left)',
    file: 'src/store/enroll-rows.ts',
    from: 'AND revoked_at IS NULL AND expires_at > $2 AND uses < max_uses FOR UPDATE',
    to: 'AND revoked_at IS NULL AND expires_at > $2 FOR UPDATE',
    tests: ['test/store/enroll-rows.test.ts'],
    engines: ['postgres'],
  },
  {
    name: 'SQLite: an enroll that loses its name to another keeps the token use it took',
    file: 'src/fabric/enroll.ts',
    from: "        if (written === 'taken') throw new TakenMeanwhile()",
    to: "        if (written === 'taken') return 'taken'",
    tests: ['test/fabric/enroll-race.test.ts'],
  },
  {
    name: 'the enroll\'s one read forgets a column of the token (a first-boot token\'s provision)',
    file: 'src/store/enroll-rows.ts',
    from: "'expires_at', 'revoked_at', 'provision_id'] as const",
    to: "'expires_at', 'revoked_at'] as const",
    tests: ['test/store/enroll-rows.test.ts'],
  },
  {
    name: 'the enroll\'s one read never sees a tombstone (a removed name enrolls again on a fleet token)',
    file: 'src/store/enroll-rows.ts',
    from: 'CASE WHEN EXISTS (SELECT 1 FROM node_tombstones WHERE name = ?2) THEN 1 ELSE 0 END AS tombstoned',
    to: '0 AS tombstoned',
    tests: ['test/store/enroll-rows.test.ts'],
  },
  {
    name: 'the lag sampler keeps no long lag (the benches would print no stall and no cause)',
    file: 'src/platform/loop-lag.ts',
    from: 'if (lag >= STALL_MS && stalls.length < MAX_STALLS) {',
    to: 'if (lag >= STALL_MS * 1000 && stalls.length < MAX_STALLS) {',
    tests: ['test/platform/loop-lag.test.ts'],
  },
  {
    name: 'a marked section is not named in the lag it caused',
    file: 'src/loop-spans.ts',
    from: '  ring[next] = { name, start: mark.wall, end, cpu }',
    to: '  ring[next] = { name, start: end, end, cpu }',
    tests: ['test/platform/loop-lag.test.ts'],
  },
] satisfies Mutant[]
