// Projects panel (read-only): each project's replicas, where they are placed
// and what could not be placed (GET /api/v1/projects). Deploying stays in the CLI.
import { badge, code, h, readPanel, table } from './lib.js'

export const { show, hide } = readPanel({
  title: 'Projects',
  path: '/api/v1/projects',
  permission: 'server.projects.view',
  what: 'to see projects',
  render: ({ projects }) => projectsTable(projects),
  refreshMs: 10_000,
})

function projectsTable(projects) {
  const rows = projects.map((p) => {
    const running = p.placements.filter((x) => x.state === 'running').length
    return h(
      'tr',
      { 'data-project': p.name },
      h('td', {}, h('strong', {}, p.name), h('div', { class: 'muted small' }, code(p.command.join(' '))), envLine(p.env)),
      h('td', {}, `${running} / ${p.replicas} running`),
      h('td', {}, `${p.cpu} m · ${p.memory} MB`),
      h('td', { class: 'placements' }, p.placements.length === 0 ? h('span', { class: 'muted' }, 'none') : p.placements.map((x) => h('div', {}, `#${x.replica} `, x.node ?? '—', ' ', badge(x.state)))),
      h('td', {}, p.shortfall > 0 ? [badge(`${p.shortfall} short`, 'failed'), p.reason ? h('div', { class: 'muted small' }, p.reason) : ''] : h('span', { class: 'muted' }, '0')),
    )
  })
  return table(['Project', 'Replicas', 'Requests', 'Placements', 'Shortfall'], rows, 'No projects. Deploy one with: muster projects deploy NAME --replicas N -- COMMAND')
}

/** The environment as the API gave it: values for those who may change projects, "***" for viewers. */
function envLine(env) {
  const entries = Object.entries(env ?? {})
  return entries.length === 0 ? '' : h('div', { class: 'muted small env' }, `env: ${entries.map(([k, v]) => `${k}=${v}`).join(' ')}`)
}
