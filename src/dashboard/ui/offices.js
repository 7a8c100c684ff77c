// Offices panel (federation): the offices this controller minted tokens for
// (GET /api/v1/federation/offices) and "Open office", which mints a vouch for
// the signed-in account (POST …/offices/:id/vouch; server.federation.vouch, and
// the vouch carries the account's role) and opens its redeem link
// in a new tab. The vouch is single use and lives 120 s; the page keeps nothing.
import { act, ago, api, badge, code, h, notice, readPanel, table } from './lib.js'

const flash = h('div', { class: 'flash', 'aria-live': 'polite' })

export const { show, hide } = readPanel({
  title: 'Offices',
  path: '/api/v1/federation/offices',
  permission: 'server.federation.view',
  what: 'to see offices',
  render: ({ offices }) => officesTable(offices),
  head: () => (flash.replaceChildren(), flash),
})

function officesTable(offices) {
  if (offices.length === 0) {
    return notice('info', 'No offices. This Platform becomes a controller when it mints an office token (', code('muster federation mint OFFICE-ID'), '); the office then starts with ', code('MUSTER_CONTROLLER_URL'), ', ', code('MUSTER_ADVERTISE_URL'), ' and ', code('MUSTER_JOIN_TOKEN'), ' set.')
  }
  const rows = offices.map((o) =>
    h(
      'tr',
      { 'data-office': o.officeId },
      h('td', {}, h('strong', {}, o.officeId), o.label ? h('div', { class: 'muted small label' }, o.label) : ''),
      h('td', {}, badge(o.status === 'revoked' ? 'revoked' : o.fresh ? 'online' : 'silent', o.status === 'revoked' ? 'revoked' : o.fresh ? 'ready' : 'unreachable')),
      h('td', {}, o.advertiseUrl ?? h('span', { class: 'muted' }, 'not registered yet')),
      h('td', {}, o.version ?? ''),
      h('td', {}, String(o.projects?.length ?? 0)),
      h('td', {}, ago(o.lastSeenAt)),
      h('td', { class: 'row-actions' }, o.status === 'active' && o.advertiseUrl ? openButton(o) : ''),
    ),
  )
  return table(['Office', 'Status', 'Address', 'Version', 'Projects', 'Last seen', ''], rows, '')
}

function openButton(o) {
  const b = h('button', { type: 'button', class: 'small primary' }, 'Open office')
  b.addEventListener('click', () =>
    act(b, flash, 'server.federation.vouch', `to open office ${o.officeId}`, async () => {
      const { redeemUrl } = await api('POST', `/api/v1/federation/offices/${encodeURIComponent(o.officeId)}/vouch`, {})
      if (!redeemUrl) throw new Error(`Office ${o.officeId} has not told this controller its address yet.`)
      // noopener: the office's page gets no handle on this one.
      window.open(redeemUrl, '_blank', 'noopener,noreferrer')
      flash.replaceChildren(notice('info', `Opened ${o.officeId} in a new tab, signed in as you. If no tab appeared, allow pop-ups for this page and press Open office again (each link works once, for two minutes).`))
    }),
  )
  return b
}
