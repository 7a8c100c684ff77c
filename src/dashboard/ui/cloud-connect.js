// Connecting a provider: its credentials go in a password field, straight to
// POST /api/v1/cloud/connections, and are never shown again. The Platform
// proves them with a list call before it keeps them; a refusal is shown in the
// dialog, which stays open. The field is emptied whenever the dialog closes.
import { api, failure, h } from './lib.js'

const FORMS = {
  hetzner: 'A project API token (read & write).',
  digitalocean: 'A personal access token (read & write).',
  aws: 'JSON: {"accessKeyId","secretAccessKey","region"?}, or keyless {"roleArn","externalId"?,"region"?} (assumed with this Platform’s own credentials), or {"ambient":true}.',
  azure: 'JSON: {"tenantId","clientId","clientSecret","subscriptionId","resourceGroup"}, or keyless workload identity with "federatedTokenFile" instead of "clientSecret".',
  gcp: 'The service account key file (JSON), as Google gives it.',
}

export function connectDialog(provider, onConnected) {
  const field = h('input', { type: 'password', name: 'credentials', required: true, autocomplete: 'off', spellcheck: 'false', maxlength: 16384, 'aria-label': `${provider} credentials` })
  const out = h('div', { class: 'flash' })
  const submit = h('button', { type: 'submit', class: 'primary' }, `Connect ${provider}`)
  const cancel = h('button', { type: 'button' }, 'Cancel')
  const dialog = h('dialog', { class: 'modal', 'aria-label': `Connect ${provider}` })
  const close = () => {
    field.value = ''
    dialog.close()
    dialog.remove()
  }
  const form = h(
    'form',
    { class: 'connect-form' },
    h('h2', {}, `Connect ${provider}`),
    h('p', { class: 'muted' }, FORMS[provider] ?? ''),
    h('label', {}, 'Credentials ', field),
    h('p', { class: 'muted small' }, 'Kept sealed by the Platform and never shown again, here or anywhere.'),
    out,
    h('div', { class: 'actions' }, cancel, submit),
  )
  cancel.addEventListener('click', close)
  dialog.addEventListener('cancel', (e) => {
    e.preventDefault()
    close()
  })
  form.addEventListener('submit', async (event) => {
    event.preventDefault()
    submit.disabled = true
    out.replaceChildren()
    try {
      await api('POST', '/api/v1/cloud/connections', { provider, credentials: field.value })
      close()
      onConnected()
    } catch (e) {
      out.replaceChildren(failure(e, 'server.cloud.connect', `to connect ${provider}`))
    } finally {
      submit.disabled = false
    }
  })
  dialog.append(form)
  document.body.append(dialog)
  dialog.showModal()
  field.focus()
}
