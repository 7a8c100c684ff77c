// Audit panel: every write with who did it (an account or a token,
// and how), from where, what, on what, and how it ended (GET /api/v1/audit,
// server.audit.view), newest first, with filters and older pages. The first
// page refreshes itself; `muster audit --follow --jsonl` feeds a SIEM.
import { api, badge, failure, h, panelHead, table } from './lib.js'

const OUTCOMES = { ok: 'ready', denied: 'revoked', refused: 'failed', failed: 'failed', started: 'pending' }
let state = null

export function show(section) {
  const principal = h('input', { type: 'search', name: 'principal', placeholder: 'account or token name', 'aria-label': 'Principal' })
  const action = h('input', { type: 'search', name: 'action', placeholder: 'action, like node or account.add', 'aria-label': 'Action' })
  const since = h('select', { name: 'since', 'aria-label': 'Since' }, [['', 'any time'], ['3600000', 'last hour'], ['86400000', 'last day'], ['604800000', 'last week']].map(([v, t]) => h('option', { value: v }, t)))
  const filters = h('form', { class: 'filters audit-filters', role: 'search' }, principal, action, since, h('button', { type: 'submit' }, 'Filter'))
  const body = h('div', {}, h('p', { class: 'muted' }, 'Loading…'))
  const more = h('div', { class: 'pager' })
  state = { body, more, rows: [], cursor: null, timer: null, query: () => ({ principal: principal.value.trim(), action: action.value.trim(), since: since.value ? new Date(Date.now() - Number(since.value)).toISOString() : '' }) }
  filters.addEventListener('submit', (e) => {
    e.preventDefault()
    load(false)
  })
  section.replaceChildren(panelHead('Audit', () => load(false)), filters, body, more)
  load(false)
  state.timer = setInterval(() => state && state.cursor === null && state.rows.length < 101 && load(false), 5000)
}

export function hide() {
  if (state) clearInterval(state.timer)
  state = null
}

async function load(older) {
  const s = state
  if (!s) return
  const q = new URLSearchParams(Object.entries({ ...s.query(), limit: '100', ...(older && s.cursor ? { cursor: s.cursor } : {}) }).filter(([, v]) => v))
  let page
  try {
    page = await api('GET', `/api/v1/audit?${q}`)
  } catch (e) {
    if (s === state) s.body.replaceChildren(failure(e, 'server.audit.view', 'to read the audit'))
    return
  }
  if (s !== state) return
  s.rows = older ? [...s.rows, ...page.entries] : page.entries
  s.cursor = page.nextCursor
  s.body.replaceChildren(entriesTable(s.rows))
  const button = h('button', { type: 'button', onclick: () => load(true) }, 'Older entries')
  s.more.replaceChildren(page.nextCursor ? button : '')
}

function entriesTable(entries) {
  const rows = entries.map((e) =>
    h(
      'tr',
      { 'data-entry': String(e.id) },
      h('td', { class: 'when' }, h('time', { datetime: e.at, title: e.at }, e.at.replace('T', ' ').slice(0, 19))),
      h('td', { class: 'principal' }, h('strong', {}, e.principal), h('div', { class: 'muted small' }, e.principalKind, e.tokenId ? ` ${e.tokenId}` : '')),
      h('td', { class: 'action' }, e.action),
      h('td', { class: 'target' }, e.target ?? h('span', { class: 'muted' }, '—')),
      h('td', {}, badge(e.outcome, OUTCOMES[e.outcome] ?? e.outcome), e.detail ? h('div', { class: 'muted small' }, e.detail) : ''),
      h('td', { class: 'source' }, h('span', { class: 'muted small' }, e.source)),
    ),
  )
  return table(['Time (UTC)', 'Principal', 'Action', 'Target', 'Outcome', 'Source'], rows, 'Nothing recorded that matches.')
}
