// One project's page: what it runs (env values masked for viewers by the
// Platform), where each replica is and its state, the tail of a replica's
// logs (GET /api/v1/projects/:name/logs), and for operators Scale, Edit and
// redeploy (POST /api/v1/projects) and Remove (DELETE /api/v1/projects/:name).
// A refresh updates the figures in place: the logs and what is being typed stay.
import { act, api, ApiError, backLink, badge, can, code, failure, h, modal, notice, table } from './lib.js'
import { deployDialog, specOf } from './project-form.js'

const TAILS = [50, 200, 1000]

/** Renders `project` into `body`; returns `update(project)` for the next refresh. */
export function projectPage(body, flash, project, { back, reload }) {
  let p = project
  const parts = {
    fields: h('dl', { class: 'fields' }),
    summary: h('p', { class: 'summary' }),
    replicas: h('div'),
    logs: logsViewer(() => p),
  }
  body.replaceChildren(
    backLink('← All projects', back),
    h('div', { class: 'panel-head' }, h('h2', { 'data-project-page': p.name }, p.name)),
    parts.summary,
    can('server.projects.manage') ? actions(() => p, flash, back, reload) : h('p', { class: 'muted small readonly' }, 'Read-only: changing projects needs permission server.projects.manage.'),
    parts.fields,
    h('h3', {}, 'Replicas'),
    parts.replicas,
    h('h3', {}, 'Logs'),
    parts.logs.el,
  )
  const update = (next) => {
    p = next
    const running = p.placements.filter((x) => x.state === 'running').length
    parts.summary.replaceChildren(
      h('strong', { class: 'running' }, `${running} / ${p.replicas} running`),
      ` · revision ${p.revision}`,
      p.shortfall > 0 ? [' · ', badge(`${p.shortfall} short`, 'failed'), p.reason ? ` (${p.reason})` : ''] : p.reason ? ` · unplaced: ${p.reason}` : '',
    )
    const env = Object.entries(p.env)
    const labels = Object.entries(p.nodeLabels ?? {})
    parts.fields.replaceChildren(
      h('dt', {}, 'Command'),
      h('dd', {}, code(p.command.join(' '))),
      h('dt', {}, 'Environment'),
      h('dd', { class: 'env' }, env.length ? env.map(([k, v]) => h('div', {}, code(`${k}=${v}`))) : h('span', { class: 'muted' }, 'none')),
      h('dt', {}, 'Each replica'),
      h('dd', {}, `${p.cpu} millicores, ${p.memory} MB`),
      h('dt', {}, 'Runs on'),
      h('dd', {}, labels.length ? ['nodes labelled ', labels.map(([k, v]) => [code(`${k}=${v}`), ' '])] : 'any ready node'),
      h('dt', {}, 'Deployed by'),
      h('dd', {}, p.deployedBy ?? (p.origin === 'local' ? h('span', { class: 'muted' }, 'unknown') : `controller ${p.origin}`)),
    )
    const rows = p.placements.map((x) =>
      h(
        'tr',
        { 'data-replica': String(x.replica) },
        h('td', {}, `#${x.replica}`),
        h('td', {}, x.node ?? h('span', { class: 'muted' }, 'not placed')),
        h('td', { class: 'state' }, badge(x.state), x.exitCode !== undefined && x.exitCode !== null ? h('span', { class: 'muted small' }, ` exit ${x.exitCode}`) : ''),
      ),
    )
    parts.replicas.replaceChildren(table(['Replica', 'Node', 'State'], rows, 'No replicas: scaled to 0.'))
    parts.logs.update(p)
  }
  update(p)
  return update
}

function actions(get, flash, back, reload) {
  const replicas = h('input', { type: 'number', name: 'scale-replicas', min: 0, max: 10000, value: get().replicas, 'aria-label': 'Replicas' })
  const scale = h('button', { type: 'button' }, 'Scale')
  scale.addEventListener('click', () =>
    act(scale, flash, 'server.projects.manage', `to scale ${get().name}`, async () => {
      const n = Number(replicas.value)
      if (!Number.isInteger(n) || n < 0 || n > 10000) throw new Error('Replicas must be a whole number from 0 to 10000.')
      const p = get()
      const done = await api('POST', '/api/v1/projects', { ...specOf(p), replicas: n })
      flash.replaceChildren(notice('info', `${p.name} is scaled to ${done.replicas} ${done.replicas === 1 ? 'replica' : 'replicas'}.`))
      await reload()
    }),
  )
  const edit = h('button', { type: 'button' }, 'Edit and redeploy')
  edit.addEventListener('click', async () => {
    const done = await deployDialog(get())
    if (done) {
      flash.replaceChildren(notice('info', `${done.name} is deployed as revision ${done.revision}; its replicas roll over as the new ones start.`))
      await reload()
    }
  })
  const remove = h('button', { type: 'button', class: 'danger' }, 'Remove')
  remove.addEventListener('click', async () => {
    const name = get().name
    const sure = await modal(`Remove ${name}?`, h('p', {}, 'Its replicas stop on every node and the project is deleted. Deploying it again starts from revision 1.'), [
      { label: 'Cancel', value: false },
      { label: `Remove ${name}`, value: true, class: 'danger' },
    ])
    if (!sure) return
    await act(remove, flash, 'server.projects.manage', `to remove ${name}`, async () => {
      await api('DELETE', `/api/v1/projects/${encodeURIComponent(name)}`)
      back()
      document.querySelector('#panel-projects .flash')?.replaceChildren(notice('info', `${name} is removed.`))
    })
  })
  return h('div', { class: 'actions-bar' }, h('label', { class: 'inline' }, 'Replicas ', replicas), scale, edit, remove)
}

/** The tail of one replica's output, asked for on demand (it is read from the node). */
function logsViewer(get) {
  const replica = h('select', { name: 'log-replica', 'aria-label': 'Replica' })
  const tail = h('select', { name: 'log-tail', 'aria-label': 'Lines' }, TAILS.map((n) => h('option', { value: String(n) }, `last ${n} lines`)))
  const showButton = h('button', { type: 'button' }, 'Show logs')
  const out = h('div', { class: 'logs-out' })
  showButton.addEventListener('click', async () => {
    const p = get()
    showButton.disabled = true
    // The node sends its output with its next heartbeat: say so while it comes.
    out.replaceChildren(h('p', { class: 'muted small logs-waiting' }, `Asking the node of replica #${replica.value} for its output…`))
    try {
      const path = `/api/v1/projects/${encodeURIComponent(p.name)}/logs?replica=${encodeURIComponent(replica.value)}&tail=${encodeURIComponent(tail.value)}`
      const r = await api('GET', path)
      out.replaceChildren(
        h('p', { class: 'muted small' }, `Replica #${r.replica} on ${r.node ?? 'no node'}: ${r.lines.length} ${r.lines.length === 1 ? 'line' : 'lines'}${r.truncated ? ' (older lines cut)' : ''}.`),
        r.lines.length ? h('pre', { class: 'logs' }, r.lines.join('\n')) : h('p', { class: 'muted' }, 'No output yet.'),
      )
    } catch (e) {
      // A Platform without the logs route (or a replica it cannot reach) answers 404.
      out.replaceChildren(e instanceof ApiError && e.status === 404 ? notice('info logs-unavailable', `Logs not available: ${e.message}`) : failure(e, 'server.projects.manage', `to read ${p.name}'s logs`))
    } finally {
      showButton.disabled = false
    }
  })
  const el = h('div', { class: 'logs-viewer' }, h('div', { class: 'filters' }, replica, tail, showButton), out)
  return {
    el,
    update(p) {
      const wanted = p.placements.map((x) => String(x.replica))
      const have = [...replica.options].map((o) => o.value)
      if (wanted.join() !== have.join() || p.placements.some((x, i) => replica.options[i]?.textContent !== label(x))) {
        const keep = replica.value
        replica.replaceChildren(...p.placements.map((x) => h('option', { value: String(x.replica) }, label(x))))
        if (wanted.includes(keep)) replica.value = keep
      }
      showButton.disabled = p.placements.length === 0
    },
  }
}

const label = (x) => `replica #${x.replica}${x.node ? ` on ${x.node}` : ''} (${x.state})`
