// Accounts panel: the people who may sign in here, with their role,
// origin (local, created by a controller's vouch, or sso: from the identity provider), state and expiry
// (GET /api/v1/accounts), and the changes server.accounts.manage may make:
// add (the password goes to the Platform once and is kept only as a hash),
// change role, disable/enable, remove. A lesser role or a disable ends the
// account's sessions at once; the Platform refuses to leave no superadmin.
import { act, ago, api, badge, h, modal, notice, readPanel, table } from './lib.js'

const ROLES = ['viewer', 'operator', 'superadmin']
const flash = h('div', { class: 'flash', 'aria-live': 'polite' })
let reload = () => {}

const panel = readPanel({
  title: 'Accounts',
  path: '/api/v1/accounts',
  permission: 'server.accounts.manage',
  what: 'to manage accounts',
  render: ({ accounts }) => h('div', {}, addForm(), accountsTable(accounts)),
  head: () => flash,
})

export function show(section) {
  flash.replaceChildren()
  reload = () => panel.show(section)
  panel.show(section)
}
export const hide = panel.hide

function accountsTable(accounts) {
  const rows = accounts.map((a) =>
    h(
      'tr',
      { 'data-account': a.name },
      h('td', {}, h('strong', {}, a.name), a.origin === 'vouch' ? h('div', { class: 'muted small' }, 'created by a vouch: no password') : a.origin === 'sso' ? h('div', { class: 'muted small' }, 'identity provider (sso): role from its groups, no password') : ''),
      h('td', {}, roleSelect(a)),
      h('td', {}, a.disabled ? badge('disabled', 'revoked') : a.expiresAt && Date.parse(a.expiresAt) <= Date.now() ? badge('expired', 'failed') : badge('active')),
      h('td', {}, a.expiresAt ? h('time', { datetime: a.expiresAt, title: a.expiresAt }, a.expiresAt.slice(0, 10)) : h('span', { class: 'muted' }, 'never')),
      h('td', {}, String(a.sessions)),
      h('td', {}, ago(a.createdAt)),
      h('td', { class: 'row-actions' }, toggleButton(a), ' ', removeButton(a)),
    ),
  )
  return table(['Account', 'Role', 'State', 'Expires', 'Sessions', 'Created', ''], rows, 'No accounts.')
}


function roleSelect(a) {
  const select = h('select', { 'aria-label': `Role of ${a.name}`, class: 'role' }, ROLES.map((r) => h('option', { value: r, selected: r === a.role }, r)))
  select.addEventListener('change', () =>
    act(select, flash, 'server.accounts.manage', `to change ${a.name}'s role`, async () => {
      try {
        const r = await api('POST', `/api/v1/accounts/${encodeURIComponent(a.name)}/role`, { role: select.value })
        flash.replaceChildren(notice('info', `${r.name} is now ${r.role}.${r.ended ? ` Ended ${r.ended.sessions} session(s) and ${r.ended.tokens} login token(s).` : ''}`))
      } finally {
        reload()
      }
    }),
  )
  return select
}

function toggleButton(a) {
  const verb = a.disabled ? 'enable' : 'disable'
  const b = h('button', { type: 'button', class: 'small' }, a.disabled ? 'Enable' : 'Disable')
  b.addEventListener('click', () =>
    act(b, flash, 'server.accounts.manage', `to ${verb} ${a.name}`, async () => {
      await api('POST', `/api/v1/accounts/${encodeURIComponent(a.name)}/${verb}`, {})
      reload()
    }),
  )
  return b
}

function removeButton(a) {
  const b = h('button', { type: 'button', class: 'small danger' }, 'Remove')
  b.addEventListener('click', async () => {
    const sure = await modal(`Remove ${a.name}?`, h('p', {}, 'Its sessions end and every token it holds is revoked. This cannot be undone.'), [
      { label: 'Cancel', value: false },
      { label: 'Remove', value: true, class: 'primary danger' },
    ])
    if (!sure) return
    await act(b, flash, 'server.accounts.manage', `to remove ${a.name}`, async () => {
      await api('DELETE', `/api/v1/accounts/${encodeURIComponent(a.name)}`)
      reload()
    })
  })
  return b
}

function addForm() {
  const name = h('input', { name: 'name', required: true, pattern: '[a-z0-9][a-z0-9._@\\-]{0,63}', maxlength: 64, placeholder: 'alice', autocomplete: 'off', spellcheck: 'false' })
  const role = h('select', { name: 'role' }, ROLES.map((r) => h('option', { value: r, selected: r === 'viewer' }, r)))
  const password = h('input', { name: 'password', type: 'password', required: true, minlength: 12, maxlength: 1024, autocomplete: 'new-password' })
  const expires = h('input', { name: 'expires', type: 'date' })
  const submit = h('button', { type: 'submit', class: 'primary' }, 'Add account')
  const form = h('form', { class: 'inline-form', 'aria-label': 'Add an account' }, h('label', {}, 'Name ', name), h('label', {}, 'Role ', role), h('label', {}, 'Password (12 or more) ', password), h('label', {}, 'Expires (optional) ', expires), submit)
  form.addEventListener('submit', (event) => {
    event.preventDefault()
    act(submit, flash, 'server.accounts.manage', 'to add accounts', async () => {
      const body = { name: name.value.trim(), role: role.value, password: password.value, ...(expires.value ? { expiresAt: new Date(`${expires.value}T00:00:00Z`).toISOString() } : {}) }
      password.value = ''
      const a = await api('POST', '/api/v1/accounts', body)
      flash.replaceChildren(notice('info', `Account ${a.name} added as ${a.role}; it signs in here or with muster login.`))
      reload()
    })
  })
  return form
}
