// Nodes panel: the registry (GET /api/v1/nodes), pending enrollments, fleet
// join tokens, the enrollment audit, and the operator's verbs on a node
// (revoke, drain, remove). Adding a machine lives in add-machine.js.
import { act, ago, api, badge, code, failure, h, modal, notice, panelHead, table, until } from './lib.js'
import { addMachineForm } from './add-machine.js'

const REFRESH_MS = 10_000
let timer = null
let parts = null

export function show(section) {
  parts = {
    dispatch: h('div'),
    flash: h('div', { class: 'flash', 'aria-live': 'polite' }),
    nodes: h('div', {}, h('p', { class: 'muted' }, 'Loading…')),
    pending: h('div'),
    tokens: h('div'),
    audit: h('div'),
    add: addMachineForm(() => load()),
  }
  section.replaceChildren(
    panelHead('Nodes', load),
    parts.dispatch,
    parts.add.el,
    parts.flash,
    parts.nodes,
    h('h3', {}, 'Pending enrollments'),
    parts.pending,
    h('h3', {}, 'Fleet join tokens'),
    parts.tokens,
    h('h3', {}, 'Enrollment audit'),
    parts.audit,
  )
  load()
  timer = setInterval(load, REFRESH_MS)
}

export function hide() {
  clearInterval(timer)
  timer = null
  parts = null
}

async function load() {
  const p = parts
  if (!p) return
  const [list, platform, tokens, audit] = await Promise.allSettled([
    api('GET', '/api/v1/nodes'),
    api('GET', '/api/v1/nodes/platform'),
    api('GET', '/api/v1/join-tokens'),
    api('GET', '/api/v1/nodes/audit'),
  ])
  if (p !== parts) return // the panel was left or rebuilt meanwhile
  renderDispatch(p, platform)
  if (list.status === 'rejected') {
    p.nodes.replaceChildren(failure(list.reason, 'server.nodes.view', 'to see the nodes'))
    p.pending.replaceChildren()
  } else {
    p.nodes.replaceChildren(nodesTable(list.value.nodes))
    p.pending.replaceChildren(pendingTable(list.value.pendingEnrollments))
  }
  p.tokens.replaceChildren(tokens.status === 'rejected' ? failure(tokens.reason, 'server.nodes.view', 'to see join tokens') : tokensTable(tokens.value.tokens))
  p.audit.replaceChildren(audit.status === 'rejected' ? failure(audit.reason, 'server.nodes.manage', 'to see the enrollment audit') : auditTable(audit.value.entries))
}

function renderDispatch(p, platform) {
  const off = platform.status === 'fulfilled' && !platform.value.remoteDispatch
  p.add.setEnabled(!off)
  p.dispatch.replaceChildren(
    off
      ? notice(
          'warn',
          h('strong', {}, 'Remote nodes are turned off on this Platform. '),
          'No other machine can join it yet. To let them, restart it with ',
          code('muster serve --remote-dispatch'),
          ', or open the enrollment listener with ',
          code('muster serve --enrollment-port 7443'),
          ' (machines then join over HTTPS and pin its certificate fingerprint).',
        )
      : '',
  )
}

function nodesTable(nodes) {
  const rows = nodes.map((n) =>
    h(
      'tr',
      { 'data-node': n.name },
      h('td', {}, h('strong', {}, n.name), n.drained ? [' ', badge('drained', 'muted')] : '', n.declared ? [' ', badge('declared', 'muted')] : ''),
      h('td', { class: 'state' }, badge(n.state), n.reason ? h('div', { class: 'muted small' }, n.reason) : ''),
      h('td', {}, badge(n.compatibility)),
      h('td', {}, n.version ?? h('span', { class: 'muted' }, '—')),
      h('td', {}, ago(n.lastSeenAt)),
      h('td', { class: 'labels' }, Object.entries(n.labels ?? {}).map(([k, v]) => [code(`${k}=${v}`), ' '])),
      h('td', { class: 'row-actions' }, n.auth === 'local' ? h('span', { class: 'muted small' }, 'this Platform') : nodeActions(n)),
    ),
  )
  return table(['Name', 'State', 'Compatibility', 'Version', 'Last seen', 'Labels', ''], rows, 'No nodes yet.')
}

function nodeActions(n) {
  const flash = parts.flash
  const drain = h('button', { type: 'button', class: 'small' }, n.drained ? 'Undrain' : 'Drain')
  drain.addEventListener('click', () =>
    act(drain, flash, 'server.nodes.manage', `to drain ${n.name}`, async () => {
      await api('POST', `/api/v1/nodes/${encodeURIComponent(n.name)}/drain`, { drained: !n.drained })
      await load()
    }),
  )
  const remove = removeButton(n)
  if (n.state === 'revoked') return [drain, ' ', remove]
  const revoke = h('button', { type: 'button', class: 'small danger' }, 'Revoke')
  revoke.addEventListener('click', async () => {
    const sure = await modal(
      `Revoke ${n.name}?`,
      h('p', {}, 'Its credential stops working at once, even while it sends heartbeats, and its replicas move elsewhere. The machine needs a new enrollment (', code(`muster nodes rebind ${n.name}`), ') to come back.'),
      [
        { label: 'Cancel', value: false },
        { label: `Revoke ${n.name}`, value: true, class: 'danger' },
      ],
    )
    if (!sure) return
    await act(revoke, flash, 'server.nodes.manage', `to revoke ${n.name}`, async () => {
      await api('POST', `/api/v1/nodes/${encodeURIComponent(n.name)}/revoke`, {})
      flash.replaceChildren(notice('info', `${n.name} is revoked.`))
      await load()
    })
  })
  return [drain, ' ', revoke, ' ', remove]
}

/** Remove asks first; a healthy node is refused (node-healthy) and the operator is offered to force it. */
function removeButton(n) {
  const flash = parts.flash
  const b = h('button', { type: 'button', class: 'small danger' }, 'Remove')
  const path = `/api/v1/nodes/${encodeURIComponent(n.name)}`
  b.addEventListener('click', async () => {
    const sure = await modal(
      `Remove ${n.name}?`,
      h('p', {}, 'The node leaves the registry, its credential stops working and its name stays reserved (a new enrollment needs --replace). A node still working is refused: revoke or drain it first.'),
      [
        { label: 'Cancel', value: false },
        { label: `Remove ${n.name}`, value: true, class: 'danger' },
      ],
    )
    if (!sure) return
    await act(b, flash, 'server.nodes.manage', `to remove ${n.name}`, async () => {
      try {
        await api('DELETE', path)
      } catch (e) {
        if (e?.code !== 'node-healthy') throw e
        const force = await modal(
          `${n.name} is healthy`,
          h('div', {}, h('p', {}, e.message), h('p', {}, 'Removing it anyway cuts off a machine that is still working.')),
          [
            { label: 'Cancel', value: false },
            { label: `Force remove ${n.name}`, value: true, class: 'danger' },
          ],
        )
        if (!force) return
        await api('DELETE', `${path}?force=true`)
      }
      flash.replaceChildren(notice('info', `${n.name} is removed.`))
      await load()
    })
  })
  return b
}

function pendingTable(pending) {
  const rows = pending.map((e) => h('tr', { 'data-pending': e.nodeId }, h('td', {}, e.nodeId), h('td', {}, until(e.expiresAt))))
  return table(['Name', 'Expires'], rows, 'No unused enrollments.')
}

function tokensTable(tokens) {
  const rows = tokens.map((t) => {
    const cells = [
      h('td', {}, code(t.id)),
      h('td', { class: 'label' }, t.label ?? ''),
      h('td', {}, t.namePattern ? code(t.namePattern) : h('span', { class: 'muted' }, 'any name')),
      h('td', {}, `${t.uses} / ${t.maxUses}`),
      h('td', {}, until(t.expiresAt)),
      h('td', {}, badge(t.status)),
    ]
    return h('tr', { 'data-token': t.id }, cells, h('td', { class: 'row-actions' }, t.status === 'active' ? revokeTokenButton(t) : ''))
  })
  return table(['ID', 'Label', 'Names', 'Uses', 'Expires', 'Status', ''], rows, 'No fleet join tokens. Create one with muster nodes join-token create.')
}

function revokeTokenButton(t) {
  const b = h('button', { type: 'button', class: 'small' }, 'Revoke')
  b.addEventListener('click', () =>
    act(b, parts.flash, 'server.nodes.enroll', 'to revoke a join token', async () => {
      await api('DELETE', `/api/v1/join-tokens/${encodeURIComponent(t.id)}`)
      await load()
    }),
  )
  return b
}

function auditTable(entries) {
  const rows = entries.slice(0, 20).map((e) =>
    h('tr', {}, h('td', {}, ago(e.at)), h('td', {}, badge(e.outcome)), h('td', {}, e.nodeId ?? ''), h('td', {}, e.version ?? ''), h('td', {}, e.reason ?? '')),
  )
  return table(['When', 'Outcome', 'Node', 'Version', 'Reason'], rows, 'No enrollment attempts yet.')
}
