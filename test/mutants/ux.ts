// Planted bugs for what a newcomer meets between the demo and a second
// machine: prompts on stderr, the way back after
// a rebind, doctor's words on a dead credential, errors that name the cause,
// and the dashboard's layout on a phone and on a wide screen.
import type { Mutant } from './types.ts'

const NEWCOMER_E2E = 'test/e2e/newcomer.test.ts'
const LAYOUT = 'test/dashboard/layout.test.ts'

export default [
  {
    name: 'ux: the password prompt is drawn on stdout (into `--json >file`, unseen at the terminal)',
    file: 'commands/_secret.ts',
    from: "  const value = await p.password({ message, mask: '•', output: process.stderr })",
    to: "  const value = await p.password({ message, mask: '•' })",
    tests: [NEWCOMER_E2E],
    filter: 'prompt is drawn on stderr',
  },
  {
    name: 'ux: the account prompt is drawn on stdout',
    file: 'commands/_secret.ts',
    from: '  const value = await p.text({ message, output: process.stderr })',
    to: '  const value = await p.text({ message })',
    tests: [NEWCOMER_E2E],
    filter: 'prompt is drawn on stderr',
  },
  {
    name: 'ux: nodes rebind answers without the lines to run on the machine',
    ci: true,
    file: 'src/http/routes/nodes.ts',
    from: '      return { ...r, ...nodeCommands(platform, r.nodeId) }',
    to: '      return r',
    tests: [NEWCOMER_E2E],
    filter: 'rebind',
  },
  {
    name: 'ux: doctor tells a node whose credential is dead to start its Agent',
    file: 'src/doctor/doctor.ts',
    from: '    explainStoppedAgent(checks)\n',
    to: '',
    tests: [NEWCOMER_E2E],
    filter: 'rebind',
  },
  {
    name: "ux: doctor's columns break on a long check name",
    file: 'commands/doctor.ts',
    from: '${c.name.padEnd(width)}',
    to: '${c.name.padEnd(13)}',
    tests: [NEWCOMER_E2E],
    filter: 'rebind',
  },
  {
    name: 'ux: no route to a host is passed on as library text',
    file: 'src/client/net-errors.ts',
    from: "  if (code === 'EHOSTUNREACH' || code === 'ENETUNREACH') return",
    to: "  if (code === 'never') return",
    tests: ['test/client/net-errors.test.ts'],
  },
  {
    name: 'ux: Ctrl-C on the demo stops it without a word',
    file: 'commands/demo.ts',
    from: "          printLine('\\ndemo: stopped everything and removed its directory.')",
    to: '',
    tests: [NEWCOMER_E2E],
    filter: 'Ctrl-C on the demo',
  },
  {
    name: 'ux: muster --help shows no example to start from',
    file: 'commands/_examples.ts',
    from: "  '': [",
    to: "  '(root)': [",
    tests: [NEWCOMER_E2E],
    filter: 'starts with the demo',
  },
  {
    name: 'ux: sudo worker join leaves root-owned files the Agent (as muster) cannot read',
    file: 'commands/worker/join.ts',
    from: '    keepOwner(r.dataDir)\n',
    to: '',
    tests: [NEWCOMER_E2E],
    filter: 'sudo muster worker join',
  },
  {
    name: 'ux: a lone Platform on SQLite logs six lease lines at every start',
    file: 'src/context/leases.ts',
    from: "log[this.owner.exclusive ? 'debug' : 'info']",
    to: "log['info']",
    tests: [NEWCOMER_E2E],
    filter: 'serve on SQLite',
  },
  {
    name: 'ux: layout: on a phone the tables keep their header row (tables, not cards)',
    file: 'src/dashboard/ui/app.css',
    from: '  .table-wrap thead { display: none; }',
    to: '  .table-wrap thead { }',
    tests: [LAYOUT],
    filter: 'at 420 px',
  },
  {
    name: "ux: layout: the audit's cells keep callers' long text whole (the table runs past its box at 1400 px)",
    file: 'src/dashboard/ui/app.css',
    from: '#panel-audit td { overflow-wrap: anywhere; }',
    to: '#panel-audit td { }',
    tests: [LAYOUT],
    filter: 'releases and the halted rollout',
  },
] satisfies Mutant[]
