// Releases panel (docs/upgrading.md): the newest rollout — its state and
// reason, progress per (architecture, labels) group, the nodes that failed or
// rolled back with their errors, the nodes updating now — with Pause, Resume
// and Cancel for server.releases.manage; then the signed releases, the
// release keys (public halves) and the recent rollouts. Viewers read the same
// without the buttons (and the Platform refuses them anyway).
import { act, ago, api, ApiError, badge, bar, can, code, count, failure, h, modal, notice, panelHead, table } from './lib.js'

const REFRESH_MS = 3_000
const MANAGE = 'server.releases.manage'
const IN_FLIGHT = ['downloading', 'installing', 'restarting']
let parts = null
let timer = null

export function show(section) {
  parts = { section, flash: h('div', { class: 'flash', 'aria-live': 'polite' }), body: h('div', {}, h('p', { class: 'muted' }, 'Loading…')) }
  section.replaceChildren(panelHead('Releases and rollouts', () => load()), parts.flash, parts.body)
  load()
  timer = setInterval(() => load(), REFRESH_MS)
}

export function hide() {
  clearInterval(timer)
  timer = null
  parts = null
}

let loads = 0
async function load() {
  const p = parts
  if (!p) return
  const mine = ++loads
  let releases, rollout, history
  try {
    ;[releases, history, rollout] = await Promise.all([
      api('GET', '/api/v1/releases'),
      api('GET', '/api/v1/rollouts'),
      api('GET', '/api/v1/rollouts/latest?nodes=watch').catch((e) => (e instanceof ApiError && e.status === 404 ? null : Promise.reject(e))),
    ])
  } catch (e) {
    if (p === parts && mine === loads) p.body.replaceChildren(failure(e, 'server.nodes.view', 'to see releases and rollouts'))
    return
  }
  if (p !== parts || mine !== loads) return
  p.body.replaceChildren(
    rollout ? rolloutCard(rollout) : h('p', { class: 'muted empty' }, 'No rollout yet. Start one with: muster rollouts start VERSION'),
    h('h3', {}, 'Releases'),
    releasesTable(releases.releases),
    h('h3', {}, 'Release keys'),
    keysTable(releases.keys),
    h('h3', {}, 'Recent rollouts'),
    historyTable(history.rollouts),
  )
}

const inFlight = (c) => IN_FLIGHT.reduce((n, s) => n + c[s], 0)
const failedOf = (c) => c.failed + c['rolled-back']

function rolloutCard(r) {
  const total = r.total
  const c = r.counts
  const kind = r.state === 'halted' ? 'error' : r.state === 'paused' ? 'warn' : r.state === 'done' && failedOf(c) === 0 ? 'ok' : 'info'
  const headline = h(
    'div',
    { class: `verdict ${kind === 'ok' ? 'ok' : kind === 'info' ? 'info' : 'warn'}`, 'data-rollout': r.id, 'data-state': r.state },
    h('strong', {}, `Rollout ${r.id} to ${r.version}: ${r.state}`),
    r.reason ? h('div', { class: 'reason' }, r.reason) : '',
  )
  const summary = h(
    'div',
    { class: 'tiles rollout-tiles' },
    tile('Progress', bar(c.done, total, `${count(c.done)} of ${count(total)} done`, 'Nodes done')),
    tile('Updating now', h('p', { class: 'big' }, count(inFlight(c)), h('span', { class: 'of' }, ` / at most ${count(r.maxUnavailableNodes)}`))),
    tile('Failed or rolled back', h('p', { class: `big${failedOf(c) > 0 ? ' bad' : ''}` }, count(failedOf(c))), h('p', { class: 'muted small' }, `${r.maxFailures} allowed after the canaries`)),
    tile('Pending · skipped', h('p', { class: 'big' }, count(c.pending), h('span', { class: 'of' }, ` · ${count(c.skipped)}`))),
  )
  const settings = h('p', { class: 'muted small' }, `Started ${new Date(r.createdAt).toISOString().replace('T', ' ').slice(0, 16)} UTC by ${r.createdBy}; canaries ${r.canaries ?? 'one per group'}, soak ${r.soakSeconds} s, health deadline ${r.healthTimeoutSeconds} s${r.selector.length ? `, nodes with ${r.selector.join(', ')}` : ''}.`)
  const groups = table(
    ['Group', 'Nodes', 'Progress', 'Updating', 'Failed', 'Pending'],
    r.groups.map((g) =>
      h(
        'tr',
        { 'data-group': g.group },
        h('td', {}, code(g.group)),
        h('td', {}, count(g.total)),
        h('td', { class: 'meter-cell' }, bar(g.counts.done, g.total, `${count(g.counts.done)} done`, `Done in ${g.group}`)),
        h('td', {}, count(inFlight(g.counts))),
        h('td', {}, failedOf(g.counts) > 0 ? badge(String(failedOf(g.counts)), 'failed') : '0'),
        h('td', {}, count(g.counts.pending)),
      ),
    ),
    'No nodes.',
  )
  const failing = r.nodes.filter((n) => n.state === 'failed' || n.state === 'rolled-back')
  const updating = r.nodes.filter((n) => IN_FLIGHT.includes(n.state))
  const nodeRows = (list) =>
    list.map((n) => h('tr', { 'data-rollout-node': n.name }, h('td', {}, h('strong', {}, n.name), n.canary ? h('div', { class: 'muted small' }, 'canary') : ''), h('td', {}, badge(n.state, stateKind(n.state))), h('td', {}, `${n.from ?? '?'} → ${r.version}`), h('td', { class: 'error-cell' }, n.error ?? h('span', { class: 'muted' }, '—')), h('td', {}, ago(n.updatedAt))))
  return h(
    'div',
    { class: 'rollout' },
    headline,
    steer(r),
    summary,
    settings,
    h('h3', {}, 'Progress by group'),
    groups,
    h('h3', {}, `Failing nodes (${failing.length})`),
    table(['Node', 'State', 'Update', 'Error', 'When'], nodeRows(failing), 'No node failed.'),
    updating.length ? [h('h3', {}, `Updating now (${updating.length})`), table(['Node', 'State', 'Update', 'Error', 'When'], nodeRows(updating), '')] : '',
  )
}

function tile(title, ...children) {
  return h('div', { class: 'tile' }, h('h4', {}, title), ...children)
}

const stateKind = (s) => (s === 'done' ? 'ready' : s === 'failed' || s === 'rolled-back' ? 'failed' : s === 'skipped' ? 'skipped' : 'pending')

/** Pause, Resume, Cancel for those who may; a note for those who may not. */
function steer(r) {
  if (!['running', 'paused', 'halted'].includes(r.state)) return ''
  if (!can(MANAGE)) return notice('info', `Read-only: steering rollouts needs permission ${MANAGE}.`)
  const verb = (label, action, cls = '') => {
    const b = h('button', { type: 'button', class: cls }, label)
    b.addEventListener('click', async () => {
      if (action === 'cancel') {
        const sure = await modal(`Cancel rollout ${r.id}?`, h('p', {}, 'No further node is told. Nodes updating now finish; the others keep the version they run.'), [
          { label: 'Keep it', value: false },
          { label: 'Cancel the rollout', value: true, class: 'primary danger' },
        ])
        if (!sure) return
      }
      await act(b, parts.flash, MANAGE, `to ${action} rollouts`, async () => {
        const v = await api('POST', `/api/v1/rollouts/${encodeURIComponent(r.id)}/${action}`, {})
        parts.flash.replaceChildren(notice('info', `Rollout ${v.id} is ${v.state}.`))
        await load()
      })
    })
    return b
  }
  return h(
    'div',
    { class: 'actions-bar rollout-actions' },
    r.state === 'running' ? verb('Pause', 'pause') : verb(r.state === 'halted' ? 'Resume anyway' : 'Resume', 'resume', 'primary'),
    verb('Cancel', 'cancel', 'danger'),
  )
}

const mb = (n) => (n >= 1048576 ? `${(n / 1048576).toLocaleString('en', { maximumFractionDigits: 1 })} MB` : `${Math.max(1, Math.round(n / 1024)).toLocaleString('en')} KB`)

function releasesTable(list) {
  const rows = [...list].reverse().map((x) =>
    h('tr', { 'data-release': x.sha256 }, h('td', {}, h('strong', {}, x.version)), h('td', {}, String(x.sequence)), h('td', {}, x.arch), h('td', {}, code(x.sha256.slice(0, 16)), x.mirrors.length ? h('div', { class: 'muted small' }, `mirrors: ${x.mirrors.join(' ')}`) : ''), h('td', {}, mb(x.size)), h('td', {}, mb(x.compressedSize)), h('td', {}, code(x.kid)), h('td', {}, ago(x.addedAt))),
  )
  return table(['Version', 'Sequence', 'Arch', 'SHA-256', 'Size', 'Download', 'Signed by', 'Added'], rows, 'No release yet. Sign and add one with: muster releases add BINARY --key FILE')
}

function keysTable(keys) {
  const rows = keys.map((k) => h('tr', { 'data-key': k.kid }, h('td', {}, code(k.kid)), h('td', { class: 'target' }, code(k.publicKey)), h('td', {}, k.endorsedBy ? code(k.endorsedBy) : h('span', { class: 'muted' }, 'the first key')), h('td', {}, ago(k.addedAt))))
  return table(['Key', 'Public key', 'Endorsed by', 'Added'], rows, 'No release key yet: the first release adds its key.')
}

function historyTable(list) {
  const rows = list.map((x) => h('tr', { 'data-past-rollout': x.id }, h('td', {}, code(x.id)), h('td', {}, x.version), h('td', {}, badge(x.state, x.state === 'done' ? 'ready' : x.state === 'halted' ? 'failed' : 'pending')), h('td', {}, `${count(x.counts.done)} done, ${count(failedOf(x.counts))} failed`), h('td', {}, ago(x.createdAt)), h('td', {}, x.createdBy), h('td', { class: 'error-cell' }, x.reason ?? '')))
  return table(['Rollout', 'Version', 'State', 'Nodes', 'Started', 'By', 'Reason'], rows, 'No rollout yet.')
}
