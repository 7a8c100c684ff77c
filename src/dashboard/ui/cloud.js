// Providers and machines (docs/cloud.md): each provider with Connect or
// Disconnect, the machines this Platform created (Add a machine, Release),
// the scale-out card, all as text. A build without the cloud routes answers
// 404, and the panel says so instead of failing.
import { act, api, ApiError, ago, badge, failure, h, modal, notice, readPanel, table } from './lib.js'
import { connectDialog } from './cloud-connect.js'
import { addMachineWizard } from './cloud-wizard.js'
import { scalingCard } from './cloud-scaling.js'

const panel = readPanel({
  title: 'Providers and machines',
  path: '/api/v1/cloud/status',
  permission: 'server.cloud.view',
  what: 'to see cloud providers',
  render,
  fallback: (e) => (e instanceof ApiError && e.status === 404 ? notice('info', 'Cloud providers are not available in this build.') : undefined),
})
export const { show, hide } = panel

/** Renders again from a fresh status (after a change). */
function reload() {
  const section = document.getElementById('panel-cloud')
  if (section && !section.hidden) panel.show(section)
}

function render(status) {
  const out = h('div', { class: 'flash' })
  const connected = status.providers.filter((p) => p.connected).map((p) => p.provider)
  const machines = h('div', {}, h('p', { class: 'muted' }, 'Loading machines…'))
  loadMachines(machines)
  const add = h('button', { type: 'button', class: 'primary', disabled: !status.provisioning.available || connected.length === 0 }, 'Add a machine')
  add.addEventListener('click', () => addMachineWizard(connected, reload))
  return h(
    'div',
    {},
    out,
    h('h3', {}, 'Providers'),
    providers(status.providers, out),
    h('h3', {}, 'Machines'),
    h('div', { class: 'add-machine' }, add, ' ', status.provisioning.available ? '' : h('span', { class: 'muted small' }, `Provisioning is unavailable: ${status.provisioning.reason}`)),
    h('p', { class: 'muted small' }, `${status.machines.total} machine(s): ${status.machines.starting} starting, ${status.machines.ready} ready, ${status.machines.failed} failed.`),
    machines,
    h('h3', {}, 'Scale-out'),
    scalingCard(status.scaling, connected, reload),
  )
}

function providers(list, out) {
  const rows = list.map((p) => {
    const button = p.connected
      ? h('button', { type: 'button', class: 'small danger' }, 'Disconnect')
      : h('button', { type: 'button', class: 'small primary' }, 'Connect')
    button.addEventListener('click', async () => {
      if (!p.connected) return connectDialog(p.provider, reload)
      const sure = await modal(`Disconnect ${p.provider}?`, h('p', {}, 'Its credentials are forgotten. Machines it created must be released first.'), [
        { label: 'Cancel', value: false },
        { label: `Disconnect ${p.provider}`, value: true, class: 'danger' },
      ])
      if (sure) await act(button, out, 'server.cloud.connect', `to disconnect ${p.provider}`, async () => {
        await api('DELETE', `/api/v1/cloud/connections/${encodeURIComponent(p.provider)}`)
        reload()
      })
    })
    return h(
      'tr',
      { 'data-provider': p.provider },
      h('td', {}, p.provider),
      h('td', {}, p.connected ? badge('connected', 'ready') : badge('not connected', 'pending')),
      h('td', {}, p.account ?? '—'),
      h('td', {}, String(p.machines)),
      h('td', {}, p.connectedAt ? [ago(p.connectedAt), p.connectedBy ? ` by ${p.connectedBy}` : ''] : '—'),
      h('td', { class: 'row-actions' }, button),
    )
  })
  return table(['Provider', 'Status', 'Account', 'Machines', 'Connected', ''], rows, 'No providers.')
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
        { 'data-machine': p.name },
        h('td', {}, p.name),
        h('td', {}, `${p.provider} ${p.region} ${p.size}`),
        h('td', {}, p.role),
        h('td', {}, badge(p.state), p.reason ? h('div', { class: 'muted' }, p.reason) : ''),
        h('td', {}, p.node ? `${p.node.name} (${p.node.state})` : '—'),
        h('td', {}, ago(p.createdAt)),
        h('td', {}, p.releasedAt ? 'released' : release),
      )
    })
    out.prepend(table(['Name', 'Where', 'Role', 'State', 'Node', 'Requested', ''], rows, 'No machines created by this Platform.'))
    target.replaceChildren(out)
  } catch (e) {
    target.replaceChildren(failure(e, 'server.cloud.view', 'to see machines'))
  }
}
