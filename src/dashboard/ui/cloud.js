// Providers and machines (SPEC §11). The cloud routes may be absent from a
// build: a 404 says so instead of failing. Until the routes settle, answers are
// shown generically (every field, every list as a table), all as text.
import { ApiError, h, notice, readPanel, table } from './lib.js'

export const { show, hide } = readPanel({
  title: 'Providers and machines',
  path: '/api/v1/cloud/status',
  permission: 'server.cloud.view',
  what: 'to see cloud providers',
  render,
  fallback: (e) => (e instanceof ApiError && e.status === 404 ? notice('info', 'Cloud providers are not available in this build.') : undefined),
})

function render(value) {
  if (Array.isArray(value)) {
    const keys = [...new Set(value.flatMap((row) => (row && typeof row === 'object' ? Object.keys(row) : [])))]
    if (keys.length === 0) return h('p', {}, value.map(text).join(', ') || 'none')
    return table(keys, value.map((row) => h('tr', {}, keys.map((k) => h('td', {}, cell(row?.[k]))))), 'None.')
  }
  if (value && typeof value === 'object') {
    return h('dl', { class: 'fields' }, Object.entries(value).map(([k, v]) => [h('dt', {}, k), h('dd', {}, v && typeof v === 'object' ? render(v) : text(v))]))
  }
  return h('p', {}, text(value))
}

function cell(v) {
  return v && typeof v === 'object' ? JSON.stringify(v) : text(v)
}

function text(v) {
  return v === null || v === undefined ? '—' : String(v)
}
