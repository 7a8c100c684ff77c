// Overview panel: "is my fleet healthy" on one screen, at 10
// nodes or 100,000. The Platform aggregates (GET /api/v1/overview: nodes by
// state, capacity and requests, replicas, heartbeat ages, projects needing
// attention, the Platforms and the loops each runs, which one answered); the
// nodes come a page at a time with what runs on each (GET /api/v1/overview/nodes).
import { ago, api, badge, bar, code, cores, count, cursorPager, failure, h, megabytes, notice, panelHead, table } from './lib.js'
import { openProject } from './projects.js'

const REFRESH_MS = 10_000
const PAGE = 50
const STATES = ['ready', 'unreachable', 'enrolled', 'revoked']
const LOOP_NAMES = {
  placement: 'placement',
  'trust-keys': 'trust keys',
  probes: 'probes',
  'cloud-reconcile': 'cloud reconcile',
  'cloud-autoscale': 'autoscale',
  'audit-prune': 'audit pruning',
  'federation-heartbeat': 'office heartbeat',
}
let parts = null
let timer = null
let state = ''
let pager = null

export function show(section) {
  parts = {
    verdict: h('div', { class: 'verdict-box' }, h('p', { class: 'muted' }, 'Loading…')),
    here: h('p', { class: 'here muted' }),
    tiles: h('div', { class: 'tiles' }),
    platforms: h('div'),
    projects: h('div'),
    nodes: h('div'),
    pager: h('div', { class: 'pager' }),
  }
  pager = cursorPager(parts.pager, PAGE, () => loadNodes(parts))
  state = ''
  section.replaceChildren(
    panelHead('Overview', load),
    parts.here,
    parts.verdict,
    parts.tiles,
    h('h3', {}, 'Projects needing attention'),
    parts.projects,
    h('h3', {}, 'Platforms'),
    parts.platforms,
    h('h3', {}, 'Nodes'),
    stateFilter(),
    parts.nodes,
    parts.pager,
  )
  load()
  timer = setInterval(load, REFRESH_MS)
}

export function hide() {
  clearInterval(timer)
  timer = null
  parts = null
}

function stateFilter() {
  const select = h('select', { name: 'fleet-state', 'aria-label': 'Show fleet nodes in state' }, h('option', { value: '' }, 'Every state'), STATES.map((s) => h('option', { value: s }, s)))
  select.addEventListener('change', () => {
    state = select.value
    pager.reset()
    loadNodes(parts)
  })
  return h('div', { class: 'filters' }, select)
}

async function load() {
  const p = parts
  if (!p) return
  await Promise.all([loadSummary(p), loadNodes(p)])
}

async function loadSummary(p) {
  let o
  try {
    o = await api('GET', '/api/v1/overview')
  } catch (e) {
    if (p === parts) p.verdict.replaceChildren(failure(e, 'server.nodes.view', 'to see the overview'))
    return
  }
  if (p !== parts) return
  p.here.replaceChildren('You are on Platform ', h('strong', { 'data-stat': 'self' }, o.self.id), ` on ${o.self.hostname} · `, code(o.self.url), ` · muster ${o.self.version}`)
  p.verdict.replaceChildren(verdict(o))
  p.tiles.replaceChildren(...tiles(o))
  p.platforms.replaceChildren(platformsTable(o))
  p.projects.replaceChildren(projectsPart(o.projects))
}

let nodeLoads = 0
async function loadNodes(p) {
  if (!p) return
  const mine = ++nodeLoads
  const q = new URLSearchParams({ limit: String(PAGE) })
  if (state) q.set('state', state)
  if (pager.cursor) q.set('cursor', pager.cursor)
  try {
    const page = await api('GET', `/api/v1/overview/nodes?${q}`)
    if (p !== parts || mine !== nodeLoads) return
    p.nodes.replaceChildren(nodesTable(page.nodes))
    pager.render(page.nextCursor, page.nodes.length)
  } catch (e) {
    if (p === parts && mine === nodeLoads) p.nodes.replaceChildren(failure(e, 'server.nodes.view', 'to see the nodes'))
  }
}

/** One line: healthy, or each thing that is not. */
function verdict(o) {
  const n = o.nodes.counts
  const problems = []
  if (n.unreachable) problems.push(`${count(n.unreachable)} ${n.unreachable === 1 ? 'node is' : 'nodes are'} unreachable`)
  if (n.enrolled) problems.push(`${count(n.enrolled)} enrolled ${n.enrolled === 1 ? 'node has' : 'nodes have'} not sent a heartbeat yet`)
  if (o.replicas.shortfall) problems.push(`${count(o.replicas.shortfall)} ${o.replicas.shortfall === 1 ? 'replica fits' : 'replicas fit'} on no node (add capacity)`)
  if (o.projects?.needingAttention) problems.push(`${count(o.projects.needingAttention)} ${o.projects.needingAttention === 1 ? 'project runs' : 'projects run'} fewer replicas than asked`)
  const idle = o.loops.filter((l) => l.platform === null).map((l) => LOOP_NAMES[l.name] ?? l.name)
  if (idle.length) problems.push(`no live Platform runs ${idle.join(', ')}`)
  if (problems.length === 0) return h('div', { class: 'verdict ok', 'data-verdict': 'healthy', role: 'status' }, h('strong', {}, 'Healthy. '), n.total ? `Every node heartbeats and every replica has a place.` : 'No nodes yet: add a machine on the Nodes page.')
  return h('div', { class: 'verdict warn', 'data-verdict': 'attention', role: 'status' }, h('strong', {}, 'Needs attention: '), problems.join('; '), '.')
}

const stat = (key, value, text = count(value)) => h('span', { 'data-stat': key, 'data-value': String(value) }, text)

function tile(title, ...body) {
  return h('section', { class: 'tile' }, h('h4', {}, title), ...body)
}

function tiles(o) {
  const n = o.nodes
  const r = o.replicas
  const hb = n.heartbeats
  return [
    tile(
      'Nodes',
      h('p', { class: 'big' }, stat('nodes.total', n.counts.total)),
      h('ul', { class: 'states' }, STATES.map((s) => h('li', {}, badge(s), ' ', stat(`nodes.${s}`, n.counts[s]))), h('li', {}, badge('drained', 'muted'), ' ', stat('nodes.drained', n.drained))),
    ),
    tile(
      'CPU requested (ready nodes)',
      bar(n.used.cpuMillis, n.capacity.cpuMillis, [stat('cpu.used', n.used.cpuMillis, cores(n.used.cpuMillis)), ' of ', stat('cpu.capacity', n.capacity.cpuMillis, cores(n.capacity.cpuMillis))], 'CPU requested'),
      h('p', { class: 'muted small' }, `${cores(Math.max(0, n.capacity.cpuMillis - n.used.cpuMillis))} free`),
    ),
    tile(
      'Memory requested (ready nodes)',
      bar(n.used.memoryMB, n.capacity.memoryMB, [stat('memory.used', n.used.memoryMB, megabytes(n.used.memoryMB)), ' of ', stat('memory.capacity', n.capacity.memoryMB, megabytes(n.capacity.memoryMB))], 'Memory requested'),
      h('p', { class: 'muted small' }, `${megabytes(Math.max(0, n.capacity.memoryMB - n.used.memoryMB))} free`),
    ),
    tile(
      'Replicas',
      h('p', { class: 'big' }, stat('replicas.running', r.running), h('span', { class: 'of' }, ' / ', stat('replicas.desired', r.desired)), h('span', { class: 'muted small' }, ' running')),
      h('p', { class: 'small' }, stat('replicas.placed', r.placed), ' placed · ', h('span', { class: r.shortfall ? 'bad' : '' }, stat('replicas.shortfall', r.shortfall), ' short')),
    ),
    tile(
      'Last heartbeat',
      h(
        'ul',
        { class: 'ages' },
        h('li', {}, stat('heartbeats.within15s', hb.within15s), ' within 15 s'),
        h('li', {}, stat('heartbeats.within1m', hb.within1m), ' within a minute'),
        h('li', {}, stat('heartbeats.within5m', hb.within5m), ' within 5 min'),
        h('li', { class: hb.older ? 'bad' : '' }, stat('heartbeats.older', hb.older), ' older'),
        h('li', { class: 'muted' }, stat('heartbeats.never', hb.never), ' never'),
      ),
    ),
  ]
}

function platformsTable(o) {
  const rows = o.platforms.map((p) =>
    h(
      'tr',
      { 'data-platform': p.id },
      h('td', {}, h('strong', {}, p.id), p.self ? [' ', badge('you are here', 'current')] : ''),
      h('td', {}, code(p.url)),
      h('td', {}, p.version),
      h('td', {}, ago(p.startedAt)),
      h('td', {}, ago(p.lastSeenAt)),
      h('td', { class: 'runs' }, p.runs.length ? p.runs.map((r) => [badge(LOOP_NAMES[r] ?? r, 'muted'), ' ']) : h('span', { class: 'muted' }, 'no loops (standby)')),
    ),
  )
  const idle = o.loops.filter((l) => l.platform === null)
  return h(
    'div',
    {},
    table(['Platform', 'Address', 'Version', 'Started', 'Last seen', 'Runs'], rows, 'No live Platform recorded itself yet.'),
    idle.length ? notice('warn', `No live Platform runs ${idle.map((l) => LOOP_NAMES[l.name] ?? l.name).join(', ')} now; a Platform takes it over within seconds of its lease expiring.`) : '',
  )
}

function projectsPart(projects) {
  if (projects === null) return notice('warn permission', 'You need permission server.projects.view to see projects.')
  if (projects.total === 0) return h('p', { class: 'muted empty' }, 'No projects yet.')
  if (projects.needingAttention === 0) return h('p', { class: 'muted empty', 'data-stat': 'projects.ok' }, `All ${count(projects.total)} ${projects.total === 1 ? 'project runs' : 'projects run'} every replica they ask for.`)
  const rows = projects.attention.map((p) => {
    const link = h('button', { type: 'button', class: 'link' }, p.name)
    link.addEventListener('click', () => openProject(p.name))
    return h(
      'tr',
      { 'data-attention': p.name },
      h('td', {}, link),
      h('td', { class: 'running' }, `${count(p.running)} / ${count(p.desired)} running`),
      h('td', {}, `${count(p.placed)} placed`),
      h('td', {}, p.shortfall ? badge(`${count(p.shortfall)} short`, 'failed') : h('span', { class: 'muted' }, '0'), p.reason ? h('div', { class: 'muted small' }, p.reason) : ''),
    )
  })
  const more = projects.needingAttention - projects.attention.length
  return h(
    'div',
    {},
    table(['Project', 'Running', 'Placed', 'Shortfall'], rows, ''),
    h('p', { class: 'muted small' }, `${count(projects.needingAttention)} of ${count(projects.total)} projects need attention${more > 0 ? `; the ${count(more)} not listed are on the Projects page` : ''}.`),
  )
}

function nodesTable(nodes) {
  const rows = nodes.map((n) => {
    const cap = n.capacity
    return h(
      'tr',
      { 'data-fleet-node': n.name },
      h('td', {}, h('strong', {}, n.name), n.drained ? [' ', badge('drained', 'muted')] : ''),
      h('td', { class: 'state' }, badge(n.state), n.reason ? h('div', { class: 'muted small' }, n.reason) : ''),
      h('td', { class: 'meter-cell cpu', 'data-label': 'CPU' }, cap ? bar(n.used.cpuMillis, cap.cpuMillis, `${cores(n.used.cpuMillis)} of ${cores(cap.cpuMillis)}`, `CPU requested on ${n.name}`) : h('span', { class: 'muted' }, 'not reported')),
      h('td', { class: 'meter-cell memory', 'data-label': 'Memory' }, cap ? bar(n.used.memoryMB, cap.memoryMB, `${megabytes(n.used.memoryMB)} of ${megabytes(cap.memoryMB)}`, `Memory requested on ${n.name}`) : h('span', { class: 'muted' }, 'not reported')),
      h('td', { class: 'replicas' }, `${count(n.replicas.running)} / ${count(n.replicas.placed)} running`),
      h('td', { class: 'heartbeat' }, n.heartbeatAgeMs === null ? h('span', { class: 'muted' }, 'never') : ageText(n.heartbeatAgeMs, n.lastSeenAt)),
    )
  })
  return table(['Node', 'State', 'CPU requested', 'Memory requested', 'Replicas', 'Heartbeat'], rows, state ? `No ${state} nodes.` : 'No nodes yet.')
}

/** The age the Platform measured (the browser's clock may be off), the time as a tooltip. */
function ageText(ms, iso) {
  const s = Math.round(ms / 1000)
  const text = s < 5 ? 'just now' : s < 90 ? `${s} s ago` : s < 5400 ? `${Math.round(s / 60)} min ago` : s < 129600 ? `${Math.round(s / 3600)} h ago` : `${Math.round(s / 86400)} d ago`
  return h('time', { datetime: iso, title: iso }, text)
}
