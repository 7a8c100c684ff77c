// Projects panel: the projects a page at a time (GET /api/v1/projects) with
// running/desired, requests and shortfall; a project's own page
// (project-page.js) with its replicas, logs and, for operators, Scale,
// Edit and redeploy, Remove; Deploy a project (project-form.js). Viewers see
// the same pages without the buttons (and the Platform refuses them anyway).
import { api, backLink, badge, can, code, cursorPager, failure, h, panelHead, table } from './lib.js'
import { deployDialog } from './project-form.js'
import { projectPage } from './project-page.js'

const REFRESH_MS = 10_000
const PAGE = 50
/** Placements listed per project in the list. */
const SHOWN = 5
let parts = null
let timer = null
let pager = null
/** The project whose page is open (null: the list). */
let selected = null

/** The project to open when the panel shows next (the tab itself opens the list). */
let opening = null

/** Opens a project's page (from its row, or from elsewhere, like the Overview). */
export function openProject(name) {
  const section = document.getElementById('panel-projects')
  if (section && !section.hidden && parts) {
    selected = name
    render()
  } else {
    opening = name
    document.querySelector('button[data-panel=projects]')?.click()
  }
}

export function show(section) {
  selected = opening
  opening = null
  parts = { section, flash: h('div', { class: 'flash', 'aria-live': 'polite' }), body: h('div') }
  pager = cursorPager(h('div', { class: 'pager' }), PAGE, () => load())
  render()
  timer = setInterval(() => load(), REFRESH_MS)
}

export function hide() {
  clearInterval(timer)
  timer = null
  parts = null
}

function render() {
  const p = parts
  if (selected) {
    p.section.replaceChildren(p.flash, p.body)
  } else {
    const head = panelHead('Projects', () => load())
    if (can('server.projects.manage')) {
      const deploy = h('button', { type: 'button', class: 'primary' }, 'Deploy a project')
      deploy.addEventListener('click', async () => {
        const made = await deployDialog(null)
        if (made) openProject(made.name)
      })
      head.append(h('div', { class: 'head-actions' }, deploy, head.lastChild))
    }
    p.section.replaceChildren(head, p.flash, p.body, pager.el ?? '')
  }
  p.flash.replaceChildren()
  p.page = null
  p.body.replaceChildren(h('p', { class: 'muted' }, 'Loading…'))
  load()
}

let loads = 0
async function load() {
  const p = parts
  if (!p) return
  const mine = ++loads
  const current = () => p === parts && mine === loads
  if (selected) {
    const name = selected
    try {
      const project = await api('GET', `/api/v1/projects/${encodeURIComponent(name)}`)
      if (!current() || selected !== name) return
      // The same project's page is updated in place (the logs shown and what is being typed stay).
      if (p.page?.name === name && p.body.contains(p.page.root)) p.page.update(project)
      else p.page = { name, update: projectPage(p.body, p.flash, project, { back, reload: () => load() }), root: p.body.firstChild }
    } catch (e) {
      if (!current()) return
      p.page = null
      p.body.replaceChildren(backLink('← All projects', back), failure(e, 'server.projects.view', `to see project ${name}`))
    }
    return
  }
  const q = new URLSearchParams({ limit: String(PAGE) })
  if (pager.cursor) q.set('cursor', pager.cursor)
  try {
    const list = await api('GET', `/api/v1/projects?${q}`)
    if (!current() || selected) return
    p.body.replaceChildren(projectsTable(list.projects))
    pager.render(list.nextCursor, list.projects.length)
  } catch (e) {
    if (current()) p.body.replaceChildren(failure(e, 'server.projects.view', 'to see projects'))
  }
}

function back() {
  selected = null
  if (parts) render()
}

/** The Projects tab pressed while a project's page is open: the list again. */
export function home() {
  if (selected) back()
}

function projectsTable(projects) {
  const rows = projects.map((p) => {
    const running = p.placements.filter((x) => x.state === 'running').length
    const open = h('button', { type: 'button', class: 'link name' }, p.name)
    open.addEventListener('click', () => openProject(p.name))
    return h(
      'tr',
      { 'data-project': p.name },
      h('td', {}, h('strong', {}, open), h('div', { class: 'muted small cmd' }, code(p.command.join(' '))), envLine(p.env)),
      h('td', { class: 'running' }, `${running} / ${p.replicas} running`),
      h('td', { class: 'requests' }, `${p.cpu}m CPU · ${p.memory} MB`),
      h('td', { class: 'placements' }, placementsList(p.placements)),
      h('td', {}, p.shortfall > 0 ? [badge(`${p.shortfall} short`, 'failed'), p.reason ? h('div', { class: 'muted small' }, p.reason) : ''] : h('span', { class: 'muted' }, '0')),
    )
  })
  const empty = can('server.projects.manage') ? 'No projects. Deploy one with the button above, or: muster projects deploy NAME --replicas N -- COMMAND' : 'No projects yet.'
  return table(['Project', 'Replicas', 'Requests', 'Placements', 'Shortfall'], rows, empty)
}

/** The first few placements (a project's page has them all). */
function placementsList(placements) {
  if (placements.length === 0) return h('span', { class: 'muted' }, 'none')
  const shown = placements.slice(0, SHOWN).map((x) => h('div', {}, `#${x.replica} `, x.node ?? '—', ' ', badge(x.state)))
  return placements.length > SHOWN ? [shown, h('div', { class: 'muted small' }, `and ${placements.length - SHOWN} more`)] : shown
}

/** The environment as the API gave it: values for those who may change projects, "***" for viewers. */
export function envLine(env) {
  const entries = Object.entries(env ?? {})
  return entries.length === 0 ? '' : h('div', { class: 'muted small env' }, `env: ${entries.map(([k, v]) => `${k}=${v}`).join(' ')}`)
}
