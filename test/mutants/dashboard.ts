// Planted bugs in the fleet overview and the dashboard's project pages
//: each must make the named tests fail.
import type { Mutant } from './types.ts'

const FLEET = 'src/overview/fleet.ts'
const USAGE = 'src/overview/usage.ts'
const OVERVIEW_TEST = 'test/dashboard/overview.test.ts'
const SCALE_TEST = 'test/dashboard/overview-scale.test.ts'
const PROJECTS_TEST = 'test/dashboard/projects.test.ts'

export default [
  // The overview's figures.
  {
    name: 'overview: enrolled nodes counted as ready',
    ci: true,
    file: FLEET,
    from: '    counts[r.state]++\n',
    to: "    counts[r.state === 'enrolled' ? 'ready' : r.state]++\n",
    tests: [OVERVIEW_TEST],
    filter: 'figures',
  },
  {
    name: 'overview: unreachable nodes counted as ready (at 100,000 nodes)',
    file: FLEET,
    from: '    counts[r.state]++\n',
    to: "    counts[r.state === 'unreachable' ? 'ready' : r.state]++\n",
    tests: [SCALE_TEST],
  },
  {
    name: 'overview: capacity summed over every node, not the ready ones',
    file: FLEET,
    from: "if (r.state === 'ready' && r.capacity) {",
    to: 'if (r.capacity) {',
    tests: [OVERVIEW_TEST],
    filter: 'figures',
  },
  {
    name: 'overview: revoked nodes counted in the heartbeat ages',
    file: FLEET,
    from: "    if (r.state === 'revoked') return\n",
    to: '',
    tests: [OVERVIEW_TEST],
    filter: 'figures',
  },
  {
    name: 'overview: every placed replica counted as running',
    file: USAGE,
    from: 'if (on) running++',
    to: 'running++',
    tests: [OVERVIEW_TEST],
    filter: 'figures',
  },
  {
    name: 'overview: projects that run all they ask for listed as needing attention',
    file: USAGE,
    from: 'p.running < p.desired',
    to: 'p.running <= p.desired',
    tests: [OVERVIEW_TEST],
    filter: 'figures',
  },
  // The overview's node pages.
  {
    name: 'overview nodes: a page starts at the cursor (the last node of the page before, again)',
    ci: true,
    file: FLEET,
    from: 'indexAfter(names, q.after)',
    to: 'indexFrom(names, q.after)',
    tests: [OVERVIEW_TEST],
    filter: 'walk every node',
  },
  {
    name: 'overview nodes: the cursor names the first node of the next page (one node skipped per page)',
    file: FLEET,
    from: '      nextCursor = encodeCursor(nodes[nodes.length - 1]!.name)\n',
    to: '      nextCursor = encodeCursor(r.name)\n',
    tests: [OVERVIEW_TEST, SCALE_TEST],
  },
  // Who may change projects: the API and the buttons.
  {
    name: 'projects API: a viewer may deploy',
    ci: true,
    file: 'src/http/routes/projects.ts',
    from: "const who = await need(request, 'server.projects.manage')",
    to: "const who = await need(request, 'server.projects.view')",
    tests: [PROJECTS_TEST],
    filter: 'viewer',
  },
  {
    name: 'projects API: a viewer may remove',
    file: 'src/http/routes/projects.ts',
    from: ".delete('/projects/:name', ({ request, params }) => need(request, 'server.projects.manage')",
    to: ".delete('/projects/:name', ({ request, params }) => need(request, 'server.projects.view')",
    tests: [PROJECTS_TEST],
    filter: 'viewer',
  },
  {
    name: 'dashboard: the project page offers Scale, Edit and Remove to a viewer',
    file: 'src/dashboard/ui/project-page.js',
    from: "can('server.projects.manage') ? actions(",
    to: 'true ? actions(',
    tests: [PROJECTS_TEST],
    filter: 'viewer',
  },
  {
    name: 'dashboard: Deploy a project offered to a viewer',
    file: 'src/dashboard/ui/projects.js',
    from: "    if (can('server.projects.manage')) {\n",
    to: '    if (true) {\n',
    tests: [PROJECTS_TEST],
    filter: 'viewer',
  },
  {
    name: 'whoami: every principal told it holds every permission',
    file: 'src/http/routes/auth.ts',
    from: 'permissions: [...ROLE_PERMISSIONS[p.role]]',
    to: 'permissions: [...ROLE_PERMISSIONS.superadmin]',
    tests: [PROJECTS_TEST],
    filter: 'viewer',
  },
  // The logs tail.
  {
    name: 'dashboard: a Platform without the logs route shown as an error, not "logs not available"',
    file: 'src/dashboard/ui/project-page.js',
    from: 'e instanceof ApiError && e.status === 404 ? notice(',
    to: 'e instanceof ApiError && e.status === 0 ? notice(',
    tests: [PROJECTS_TEST],
    filter: 'logs',
  },
  {
    name: 'dashboard: the logs route asked for the first replica whatever is chosen',
    file: 'src/dashboard/ui/project-page.js',
    from: '?replica=${encodeURIComponent(replica.value)}',
    to: '?replica=0',
    tests: [PROJECTS_TEST],
    filter: 'logs',
  },
] satisfies Mutant[]
