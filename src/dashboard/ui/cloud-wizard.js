// "Add a machine" at a provider: provider → region → size (with its monthly
// price where the provider publishes one) → name → role, each step loaded from
// the same routes the CLI uses, then POST /api/v1/cloud/provisions. The
// machine opens no port; the node joins by itself and carries role=ROLE.
import { api, failure, h } from './lib.js'

const NODE_NAME = '[a-z0-9][a-z0-9\\-]{0,62}'

function select(name, label, placeholder) {
  const el = h('select', { name, required: true, disabled: true, 'aria-label': label }, h('option', { value: '' }, placeholder))
  return el
}

function fill(el, options, placeholder) {
  el.replaceChildren(h('option', { value: '' }, placeholder), ...options.map(([value, text]) => h('option', { value }, text)))
  el.disabled = options.length === 0
}

export function sizeText(s) {
  const price = s.priceMonthly === null ? 'price: see the provider' : `${s.priceMonthly.toFixed(2)}${s.currency ? ` ${s.currency}` : ''} per month`
  return `${s.id} — ${s.cpus} CPU, ${s.memoryMB} MB${s.diskGB === null ? '' : `, ${s.diskGB} GB disk`} — ${price}`
}

export function addMachineWizard(providers, onCreated) {
  const provider = select('provider', 'Provider', 'Choose a provider')
  fill(provider, providers.map((p) => [p, p]), 'Choose a provider')
  const region = select('region', 'Region', 'Choose a provider first')
  const size = select('size', 'Size', 'Choose a region first')
  const name = h('input', { name: 'name', required: true, pattern: NODE_NAME, maxlength: 63, placeholder: 'worker-1', autocomplete: 'off', spellcheck: 'false', disabled: true, 'aria-label': 'Name' })
  const role = h('select', { name: 'role', 'aria-label': 'Role', disabled: true }, h('option', { value: 'general' }, 'general'), h('option', { value: 'build' }, 'build'))
  const out = h('div', { class: 'flash' })
  const submit = h('button', { type: 'submit', class: 'primary', disabled: true }, 'Create machine')
  const cancel = h('button', { type: 'button' }, 'Cancel')
  const dialog = h('dialog', { class: 'modal', 'aria-label': 'Add a machine' })
  const close = () => {
    dialog.close()
    dialog.remove()
  }
  const ready = () => {
    const complete = Boolean(provider.value && region.value && size.value)
    name.disabled = !complete
    role.disabled = !complete
    submit.disabled = !complete || !name.value
  }
  const step = async (what, fn) => {
    out.replaceChildren()
    try {
      await fn()
    } catch (e) {
      out.replaceChildren(failure(e, 'server.cloud.view', what))
    }
    ready()
  }
  provider.addEventListener('change', () =>
    step('to list regions', async () => {
      fill(size, [], 'Choose a region first')
      fill(region, [], 'Loading regions…')
      if (!provider.value) return
      const r = await api('GET', `/api/v1/cloud/providers/${encodeURIComponent(provider.value)}/regions`)
      fill(region, r.regions.filter((x) => x.available).map((x) => [x.id, `${x.id} — ${x.name}`]), 'Choose a region')
    }),
  )
  region.addEventListener('change', () =>
    step('to list sizes', async () => {
      fill(size, [], 'Loading sizes…')
      if (!region.value) return
      const r = await api('GET', `/api/v1/cloud/providers/${encodeURIComponent(provider.value)}/sizes?region=${encodeURIComponent(region.value)}`)
      fill(size, r.sizes.map((s) => [s.id, sizeText(s)]), r.sizes.length ? 'Choose a size' : 'No size here runs this Platform’s binary')
    }),
  )
  size.addEventListener('change', ready)
  name.addEventListener('input', ready)
  cancel.addEventListener('click', close)
  dialog.addEventListener('cancel', (e) => {
    e.preventDefault()
    close()
  })
  const form = h(
    'form',
    { class: 'wizard' },
    h('h2', {}, 'Add a machine'),
    h('p', { class: 'muted' }, 'The machine installs the worker role and joins this Platform by itself. It opens no port: its node is ready on heartbeats alone.'),
    h('ol', { class: 'steps' }, h('li', {}, h('label', {}, 'Provider ', provider)), h('li', {}, h('label', {}, 'Region ', region)), h('li', {}, h('label', {}, 'Size ', size)), h('li', {}, h('label', {}, 'Name ', name)), h('li', {}, h('label', {}, 'Role ', role))),
    out,
    h('div', { class: 'actions' }, cancel, submit),
  )
  form.addEventListener('submit', async (event) => {
    event.preventDefault()
    submit.disabled = true
    out.replaceChildren()
    try {
      const p = await api('POST', '/api/v1/cloud/provisions', { provider: provider.value, region: region.value, size: size.value, name: name.value.trim(), role: role.value })
      if (p.state === 'failed') throw new Error(`${p.name} failed: ${p.reason}`)
      close()
      onCreated()
    } catch (e) {
      out.replaceChildren(failure(e, 'server.cloud.manage', 'to create machines'))
      ready()
    }
  })
  dialog.append(form)
  document.body.append(dialog)
  dialog.showModal()
  provider.focus()
}
