// Planted bugs in the Platform's own node and in how a start is recorded:
// the local node contains its replicas as an Agent does (a uid per project,
// a cgroup each), and a replica's command runs only once its start is
// recorded. `--only 'nodeside'`.
import type { Mutant } from './types.ts'

export default [
  {
    name: "nodeside: the local node runs replicas as the Platform's own user (root reads platform/master.key)",
    ci: true,
    file: 'src/projects/local-node.ts',
    from: '    runAs: contained.runAs,\n',
    to: '',
    tests: ['test/e2e/local-containment.test.ts'],
  },
  {
    name: 'nodeside: the local node gives its replicas no cgroups (a setsid escape is in none)',
    file: 'src/projects/local-node.ts',
    from: '    cgroups: contained.cgroups,\n',
    to: '    cgroups: null,\n',
    tests: ['test/e2e/local-containment.test.ts'],
  },
  {
    name: 'nodeside: a replica is told to run before its start is recorded (a runner killed in between leaves a copy the next one starts again)',
    ci: true,
    file: 'src/replicas/runner.ts',
    from: '    this.pauseForTest(s)\n    this.save()\n    const started = goAhead(proc)\n',
    to: '    const started = goAhead(proc)\n    this.pauseForTest(s)\n    this.save()\n',
    tests: ['test/e2e/start-crash.test.ts'],
  },
  {
    name: "nodeside: the local node takes the uid slice an Agent on the same data directory takes (their projects' uids collide)",
    file: 'src/replicas/uids.ts',
    from: '      const slice = salt === undefined ? agents : (agents + 1 + (hash(`${dataDir.root}\\0${salt}`) % (SLICES - 1))) % SLICES\n',
    to: '      const slice = agents\n',
    tests: ['test/e2e/local-containment.test.ts'],
  },
  {
    name: "nodeside: every project on the local node runs as the same uid (one reads and signals another)",
    file: 'src/projects/local-node.ts',
    from: '    runAs: contained.runAs,\n',
    to: "    runAs: () => contained.runAs('shared'),\n",
    tests: ['test/e2e/local-containment.test.ts'],
  },
] satisfies Mutant[]
