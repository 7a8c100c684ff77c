// The scale-out card: consent (off until given), the most machines this
// Platform may create, the cooldown between two orders, and what to order.
// Saved with PUT /api/v1/cloud/scaling, which needs server.cloud.connect.
import { act, api, h } from './lib.js'
import { sizeText } from './cloud-wizard.js'

export function scalingCard(s, providers, onSaved) {
  const consent = h('input', { type: 'checkbox', name: 'enabled', checked: s.enabled })
  const max = h('input', { type: 'number', name: 'maxMachines', min: 1, max: 1000, value: s.maxMachines, required: true, 'aria-label': 'Max machines' })
  const cooldown = h('input', { type: 'number', name: 'cooldownMinutes', min: 1, max: 1440, value: s.cooldownMinutes, required: true, 'aria-label': 'Cooldown (minutes)' })
  const opt = (v, text, chosen) => h('option', { value: v, selected: v === chosen }, text)
  const provider = h('select', { name: 'provider', 'aria-label': 'Order at' }, opt('', '—', s.provider ?? ''), providers.map((p) => opt(p, p, s.provider)))
  const region = h('select', { name: 'region', 'aria-label': 'Order in region' }, s.region ? opt(s.region, s.region, s.region) : opt('', '—', ''))
  const size = h('select', { name: 'size', 'aria-label': 'Order size' }, s.size ? opt(s.size, s.size, s.size) : opt('', '—', ''))
  const role = h('select', { name: 'role', 'aria-label': 'Order role' }, opt('general', 'general', s.role), opt('build', 'build', s.role))
  const out = h('div', { class: 'flash' })
  const save = h('button', { type: 'submit', class: 'primary' }, 'Save scale-out')
  const load = async (what, path, target, map) => {
    try {
      const r = await api('GET', path)
      target.replaceChildren(opt('', '—', ''), ...map(r).map(([v, t]) => opt(v, t, '')))
    } catch (e) {
      out.replaceChildren(h('div', { class: 'notice error' }, `Cannot list ${what}: ${e.message}`))
    }
  }
  provider.addEventListener('change', () => {
    size.replaceChildren(opt('', '—', ''))
    if (provider.value) load('regions', `/api/v1/cloud/providers/${encodeURIComponent(provider.value)}/regions`, region, (r) => r.regions.filter((x) => x.available).map((x) => [x.id, x.id]))
  })
  region.addEventListener('change', () => {
    if (region.value) load('sizes', `/api/v1/cloud/providers/${encodeURIComponent(provider.value)}/sizes?region=${encodeURIComponent(region.value)}`, size, (r) => r.sizes.map((x) => [x.id, sizeText(x)]))
  })
  const form = h(
    'form',
    { class: 'inline-form scaling', 'aria-label': 'Scale-out' },
    h('label', { class: 'check' }, consent, ' Let this Platform order machines by itself when replicas fit nowhere for two minutes'),
    h('label', {}, 'Max machines ', max),
    h('label', {}, 'Cooldown (minutes) ', cooldown),
    h('label', {}, 'Provider ', provider),
    h('label', {}, 'Region ', region),
    h('label', {}, 'Size ', size),
    h('label', {}, 'Role ', role),
    save,
  )
  form.addEventListener('submit', (event) => {
    event.preventDefault()
    act(save, out, 'server.cloud.connect', 'to change scale-out', async () => {
      const body = { enabled: consent.checked, maxMachines: Number(max.value), cooldownMinutes: Number(cooldown.value), role: role.value }
      if (provider.value) Object.assign(body, { provider: provider.value })
      if (region.value) Object.assign(body, { region: region.value })
      if (size.value) Object.assign(body, { size: size.value })
      await api('PUT', '/api/v1/cloud/scaling', body)
      onSaved()
    })
  })
  const state = s.enabled ? `On: at most ${s.maxMachines} machine(s), one per ${s.cooldownMinutes} min, ${s.provider} ${s.region} ${s.size} (${s.role}).` : 'Off: the Platform orders nothing by itself.'
  return h('div', { class: 'scale-out' }, h('p', { class: 'scaling-state' }, state, s.lastRequestAt ? ` Last order ${s.lastRequestAt}.` : ''), form, out)
}
