// Providers and machines (SPEC §11): the connection status, the machines this
// Platform created (with Release), all as text. A build without the cloud
// routes answers 404, and the panel says so instead of failing.
import { act, api, ApiError, ago, badge, failure, h, modal, notice, readPanel, table } from './lib.js'

export const { show, hide } = readPanel({
  title: 'Providers and machines',
  path: '/api/v1/cloud/status',
  permission: 'server.cloud.view',
  what: 'to see cloud providers',
  render,
  fallback: (e) => (e instanceof ApiError && e.status === 404 ? notice('info', 'Cloud providers are not available in this build.') : undefined),
})

function render(status) {
  const machines = h('div', {}, h('p', { class: 'muted' }, 'Loading machines…'))
  loadMachines(machines)
  return h('div', {}, h('h3', {}, 'Status'), fields(status), h('h3', {}, 'Machines'), machines)
}

async function loadMachines(target) {
  try {
    const { provisions } = await api('GET', '/api/v1/cloud/provisions')
    const out = h('div', {})
    const rows = provisions.map((p) => {
      const release = h('button', { type: 'button', class: 'small danger' }, 'Release')
      release.addEventListener('click', async () => {
        const sure = await modal(`Release ${p.name}?`, h('p', {}, `The machine is deleted at ${p.provider} and its node is removed from this Platform.`), [
          { label: 'Cancel', value: false },
          { label: `Release ${p.name}`, value: true, class: 'danger' },
        ])
        if (!sure) return
        await act(release, out, 'server.cloud.manage', `to release ${p.name}`, async () => {
          await api('DELETE', `/api/v1/cloud/provisions/${encodeURIComponent(p.id)}`)
          await loadMachines(target)
        })
      })
      return h(
        'tr',
        {},
        h('td', {}, p.name),
        h('td', {}, `${p.provider} ${p.region} ${p.size}`),
        h('td', {}, badge(p.state), p.reason ? h('div', { class: 'muted' }, p.reason) : ''),
        h('td', {}, p.node ? `${p.node.name} (${p.node.state})` : '—'),
        h('td', {}, ago(p.createdAt)),
        h('td', {}, p.releasedAt ? 'released' : release),
      )
    })
    out.prepend(table(['Name', 'Where', 'State', 'Node', 'Requested', ''], rows, 'No machines created by this Platform.'))
    target.replaceChildren(out)
  } catch (e) {
    target.replaceChildren(failure(e, 'server.cloud.view', 'to see machines'))
  }
}

function fields(value) {
  if (Array.isArray(value)) return h('p', {}, value.map((x) => (x && typeof x === 'object' ? JSON.stringify(x) : text(x))).join(', ') || 'none')
  if (value && typeof value === 'object') {
    return h('dl', { class: 'fields' }, Object.entries(value).map(([k, v]) => [h('dt', {}, k), h('dd', {}, v && typeof v === 'object' ? fields(v) : text(v))]))
  }
  return h('p', {}, text(value))
}

function text(v) {
  return v === null || v === undefined ? '—' : String(v)
}
