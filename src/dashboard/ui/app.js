// The dashboard's entry: who is signed in (GET /api/v1/whoami), the login
// form (POST /login), the tabs (Overview first) and logout (POST /logout). Each panel is its
// own module with a `show(section)` that loads and renders it.
import { api, ApiError, h, session, whenSignedOut } from './lib.js'
import * as overview from './overview.js'
import * as nodes from './nodes.js'
import * as projects from './projects.js'
import * as offices from './offices.js'
import * as cloud from './cloud.js'
import * as accounts from './accounts.js'
import * as audit from './audit.js'
import * as releases from './releases.js'

const PANELS = { overview, nodes, projects, releases, offices, cloud, accounts, audit }
const $ = (id) => document.getElementById(id)
let current = null

/** The identity provider's button (GET /auth/oidc/info); under --oidc-only, the password fields go. */
async function showSso() {
  let info
  try {
    info = await api('GET', '/auth/oidc/info')
  } catch {
    return
  }
  const form = $('login-form')
  $('sso-login').hidden = !info.enabled
  $('sso-name').textContent = info.name ?? ''
  $('sso-or').hidden = !(info.enabled && info.passwordLogin)
  for (const el of form.querySelectorAll('label, #password-login')) el.hidden = !info.passwordLogin
  for (const el of form.querySelectorAll('input')) el.required = info.passwordLogin
}

const SSO_MESSAGES = {
  refused: 'Sign-in with the identity provider was refused. An administrator finds the reason in the audit.',
  office: 'This Platform is an office of a controller: sign in on the controller and reach this office with a vouch.',
  off: 'Sign-in with an identity provider is not set up on this Platform.',
  busy: 'Too many sign-ins are starting right now; try again in a moment.',
}

function showLogin(message, kind) {
  stopPanels()
  $('app-view').hidden = true
  session.who = null
  for (const id of Object.keys(PANELS)) $(`panel-${id}`).replaceChildren()
  $('who').replaceChildren()
  $('login-view').hidden = false
  loginMessage(message, kind)
  showSso()
  $('login-form').elements.identifier.focus()
}

function loginMessage(message, kind = 'error') {
  const el = $('login-message')
  el.textContent = message ?? ''
  el.className = kind
  el.hidden = !message
}

async function showApp(who) {
  $('login-view').hidden = true
  $('app-view').hidden = false
  session.who = who
  $('who').replaceChildren(h('strong', {}, who.name), ` (${who.role})`)
  api('GET', '/healthz').then(
    (v) => ($('version').textContent = `muster ${v.version}`),
    () => {},
  )
  const wanted = location.hash.slice(1)
  open(Object.hasOwn(PANELS, wanted) ? wanted : 'overview')
}

function stopPanels() {
  for (const p of Object.values(PANELS)) p.hide?.()
  current = null
}

function open(id) {
  if (current === id) return PANELS[id].home?.() // the tab again: back to the panel's first view
  stopPanels()
  current = id
  for (const b of $('tabs').querySelectorAll('button')) b.setAttribute('aria-current', b.dataset.panel === id ? 'page' : 'false')
  for (const key of Object.keys(PANELS)) $(`panel-${key}`).hidden = key !== id
  history.replaceState(null, '', `#${id}`)
  PANELS[id].show($(`panel-${id}`))
}

async function login(event) {
  event.preventDefault()
  const form = event.target
  const button = form.querySelector('button[type=submit]')
  button.disabled = true
  loginMessage()
  try {
    await api('POST', '/login', { identifier: form.elements.identifier.value, password: form.elements.password.value })
    form.elements.password.value = ''
    await boot()
  } catch (e) {
    form.elements.password.value = ''
    // 401: wrong account or password; 403 local-login-disabled: this office's local door is closed.
    loginMessage(e instanceof ApiError ? e.message : String(e))
    form.elements.password.focus()
  } finally {
    button.disabled = false
  }
}

async function logout() {
  try {
    await api('POST', '/logout', {})
  } finally {
    showLogin('You are logged out.', 'info')
  }
}

async function boot() {
  // Back from the identity provider with a refusal: say so once, and clean the address bar.
  const sso = new URLSearchParams(location.search).get('sso')
  if (sso) history.replaceState(null, '', location.pathname + location.hash)
  try {
    showApp(await api('GET', '/api/v1/whoami'))
  } catch (e) {
    showLogin(e instanceof ApiError && e.status === 401 ? (Object.hasOwn(SSO_MESSAGES, sso ?? '') ? SSO_MESSAGES[sso] : undefined) : e.message)
  }
}

whenSignedOut((message) => showLogin(message))
$('login-form').addEventListener('submit', login)
$('logout').addEventListener('click', logout)
for (const b of $('tabs').querySelectorAll('button')) b.addEventListener('click', () => open(b.dataset.panel))
boot()
