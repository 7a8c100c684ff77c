// Shared pieces of the dashboard: building elements (text only, never markup
// from data), calling the JSON API with the session cookie, and the common
// ways a panel tells the operator why it cannot show something.

/** An element; string and number children become text nodes, attributes are set one by one. */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag)
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue
    if (name.startsWith('on')) {
      if (typeof value !== 'function') throw new TypeError(`${name} must be a function`)
      el.addEventListener(name.slice(2), value)
    } else if (name === 'class') el.className = value
    else el.setAttribute(name, value === true ? '' : String(value))
  }
  append(el, children)
  return el
}

function append(el, children) {
  for (const c of children) {
    if (c === undefined || c === null || c === false) continue
    if (Array.isArray(c)) append(el, c)
    else el.append(c instanceof Node ? c : document.createTextNode(String(c)))
  }
}

export class ApiError extends Error {
  constructor(status, code, message) {
    super(message)
    this.status = status
    this.code = code
  }
}

/** Called when the API says the session is gone (set by app.js). */
let onSignedOut = () => {}
export function whenSignedOut(fn) {
  onSignedOut = fn
}

/** A same-origin JSON call. Bodies are always JSON; the cookie is SameSite=Strict. */
export async function api(method, path, body) {
  const init = { method, credentials: 'same-origin', cache: 'no-store', redirect: 'error', headers: { accept: 'application/json' } }
  if (body !== undefined) {
    init.headers['content-type'] = 'application/json'
    init.body = JSON.stringify(body)
  }
  let res
  try {
    res = await fetch(path, init)
  } catch {
    throw new ApiError(0, 'platform-unreachable', 'The Platform did not answer; check that muster serve is running.')
  }
  const data = await res.json().catch(() => null)
  if (res.ok) return data
  const err = data && typeof data === 'object' && data.error ? data.error : {}
  const e = new ApiError(res.status, String(err.code ?? 'http-' + res.status), String(err.message ?? `The Platform answered ${res.status}.`))
  if (res.status === 401 && path !== '/login' && path !== '/api/v1/whoami') onSignedOut('Your session has ended; log in again.')
  return Promise.reject(e)
}

/** Why a call failed, in one sentence for the operator; permission refusals name the permission. */
export function explain(err, permission, what) {
  if (err instanceof ApiError && err.status === 403 && err.code === 'forbidden') {
    const named = /(server\.[a-z]+\.[a-z]+)/.exec(err.message)?.[1] ?? permission
    return `You need permission ${named} ${what}.`
  }
  return err instanceof Error ? err.message : String(err)
}

/** A message box in place of a panel's content: kind is info, warn or error. */
export function notice(kind, ...children) {
  return h('div', { class: `notice ${kind}`, role: kind === 'error' ? 'alert' : 'status' }, ...children)
}

/** The failure notice for a read, with the permission refusal spelled out. */
export function failure(err, permission, what) {
  const forbidden = err instanceof ApiError && err.status === 403 && err.code === 'forbidden'
  return h('div', { class: `notice ${forbidden ? 'warn permission' : 'error'}`, role: 'alert' }, explain(err, permission, what))
}

/**
 * A table in a scrolling box. Each cell is labelled with its column (data-label), so that on a
 * narrow screen the stylesheet shows every row as a card of "label value" lines.
 */
export function table(headers, rows, empty) {
  if (rows.length === 0) return h('p', { class: 'muted empty' }, empty)
  for (const tr of rows) {
    ;[...tr.children].forEach((td, i) => {
      if (headers[i] && !td.hasAttribute('data-label')) td.setAttribute('data-label', headers[i])
    })
  }
  return h('div', { class: 'table-wrap' }, h('table', {}, h('thead', {}, h('tr', {}, headers.map((t) => h('th', {}, t)))), h('tbody', {}, rows)))
}

/** Who is signed in (GET /api/v1/whoami), set by app.js: the dashboard offers only what the role may do. */
export const session = { who: null }

/** Whether the signed-in principal holds a permission (the Platform checks every call anyway). */
export function can(permission) {
  return Boolean(session.who?.permissions?.includes(permission))
}

/** A horizontal bar of `used` out of `total` (a meter), with its text beside it; red past 90 %. */
export function bar(used, total, text, label) {
  const share = total > 0 ? Math.min(1, used / total) : 0
  const fill = h('span', { class: 'fill' })
  fill.style.width = `${(share * 100).toFixed(1)}%` // CSSOM: allowed by the CSP, unlike a style attribute
  return h(
    'div',
    { class: `bar${share >= 0.9 ? ' full' : share >= 0.7 ? ' high' : ''}` },
    h('div', { class: 'track', role: 'meter', 'aria-label': label, 'aria-valuemin': 0, 'aria-valuemax': total, 'aria-valuenow': used }, fill),
    h('span', { class: 'bar-text' }, text),
  )
}

/** "1.5 cores" from millicores, "2.0 GB" or "512 MB" from MB. */
export const cores = (m) => `${(m / 1000).toLocaleString('en', { maximumFractionDigits: 1 })} ${m === 1000 ? 'core' : 'cores'}`
export const megabytes = (mb) => (mb >= 1024 ? `${(mb / 1024).toLocaleString('en', { maximumFractionDigits: 1 })} GB` : `${mb.toLocaleString('en')} MB`)
export const count = (n) => n.toLocaleString('en')

/**
 * Previous/next over a cursor listing: `load()` shows the page at `cursor`; `render(nextCursor, shown)`
 * puts the buttons in `el`. `reset()` goes back to the first page.
 */
export function cursorPager(el, pageSize, load) {
  let cursor
  let back = []
  return {
    el,
    get cursor() {
      return cursor
    },
    reset() {
      cursor = undefined
      back = []
    },
    render(nextCursor, shown) {
      if (nextCursor === null && back.length === 0) return el.replaceChildren()
      const prev = h('button', { type: 'button', class: 'small', disabled: back.length === 0 }, 'Previous page')
      const next = h('button', { type: 'button', class: 'small', disabled: nextCursor === null }, 'Next page')
      prev.addEventListener('click', () => {
        cursor = back.pop()
        load()
      })
      next.addEventListener('click', () => {
        back.push(cursor)
        cursor = nextCursor
        load()
      })
      const first = back.length * pageSize + 1
      el.replaceChildren(prev, ' ', h('span', { class: 'muted small' }, shown ? `Showing ${count(first)}–${count(first + shown - 1)}` : 'Nothing here'), ' ', next)
    },
  }
}

/** "3 min ago", with the exact time as a tooltip. */
export function ago(iso) {
  if (!iso) return h('span', { class: 'muted' }, 'never')
  const s = Math.round((Date.now() - Date.parse(iso)) / 1000)
  const text = s < 5 ? 'just now' : s < 90 ? `${s} s ago` : s < 5400 ? `${Math.round(s / 60)} min ago` : s < 129600 ? `${Math.round(s / 3600)} h ago` : `${Math.round(s / 86400)} d ago`
  return h('time', { datetime: iso, title: iso }, s < 0 ? `in ${Math.round(-s / 60)} min` : text)
}

export function until(iso) {
  const m = Math.round((Date.parse(iso) - Date.now()) / 60000)
  return h('time', { datetime: iso, title: iso }, m <= 0 ? 'expired' : m < 120 ? `in ${m} min` : `in ${Math.round(m / 60)} h`)
}

export function badge(text, kind = text) {
  return h('span', { class: `badge ${kind}` }, text)
}

export function code(text) {
  return h('code', {}, text)
}

/** A modal with a body and buttons; resolves with the value of the button pressed (undefined on Escape). */
export function modal(title, body, buttons) {
  const dialog = h('dialog', { class: 'modal', 'aria-label': title })
  return new Promise((resolve) => {
    const done = (value) => {
      dialog.close()
      dialog.replaceChildren()
      dialog.remove()
      resolve(value)
    }
    dialog.addEventListener('cancel', (e) => {
      e.preventDefault()
      done(undefined)
    })
    dialog.append(
      h('h2', {}, title),
      body,
      h('div', { class: 'actions' }, buttons.map((b) => h('button', { type: 'button', class: b.class, onclick: () => done(b.value) }, b.label))),
    )
    document.body.append(dialog)
    dialog.showModal()
  })
}

/** Copies text: the async clipboard where the page is a secure context, else a selection copy. */
export async function copyText(text, fallbackEl) {
  try {
    await navigator.clipboard.writeText(text)
    return true
  } catch {
    const range = document.createRange()
    range.selectNodeContents(fallbackEl)
    const sel = getSelection()
    sel.removeAllRanges()
    sel.addRange(range)
    const ok = document.execCommand('copy')
    sel.removeAllRanges()
    return ok
  }
}

/** A panel's title line with its Refresh button. */
export function panelHead(title, refresh) {
  return h('div', { class: 'panel-head' }, h('h2', {}, title), h('button', { type: 'button', onclick: () => refresh() }, 'Refresh'))
}

/**
 * A panel showing one GET: render(answer), or why it failed (`fallback` may
 * answer for an error first). `head()` gives elements to put above the body.
 */
export function readPanel({ title, path, permission, what, render, fallback, head, refreshMs }) {
  let body = null
  let timer = null
  async function load() {
    const target = body
    if (!target) return
    let view
    try {
      view = render(await api('GET', path))
    } catch (e) {
      view = fallback?.(e) ?? failure(e, permission, what)
    }
    if (target === body) target.replaceChildren(view) // unless the panel was left or rebuilt meanwhile
  }
  return {
    show(section) {
      body = h('div', {}, h('p', { class: 'muted' }, 'Loading…'))
      section.replaceChildren(panelHead(title, load), head?.() ?? '', body)
      load()
      if (refreshMs) timer = setInterval(load, refreshMs)
    },
    hide() {
      clearInterval(timer)
      timer = null
      body = null
    },
  }
}

/** Runs an action: its button disabled meanwhile, a failure explained in `out` (permission refusals name the permission). */
export async function act(button, out, permission, what, fn) {
  button.disabled = true
  out.replaceChildren()
  try {
    await fn()
  } catch (e) {
    out.replaceChildren(failure(e, permission, what))
  } finally {
    button.disabled = false
  }
}

/** A link-styled button that goes back (`text`, like "← All projects"). */
export function backLink(text, onClick) {
  const b = h('button', { type: 'button', class: 'link back' }, text)
  b.addEventListener('click', onClick)
  return b
}
