// "Add a machine": issues a single-use enrollment for one name
// (POST /api/v1/nodes/enrollments) and shows once what the Platform answered
// to run on the machine (docs/operations.md): the one-line bootstrap for a machine with
// only curl and sh, and the `muster worker join` line (the same two lines
// `muster nodes enroll-token` prints). The token is never part of a command (a command line lands in shell history and process listings):
// it is shown beside it, to paste at worker join's no-echo prompt or into a
// file. It lives only in the dialog: closing it removes the dialog from the
// page and nothing keeps it.
import { act, api, code, copyText, h, modal, notice } from './lib.js'

const NODE_NAME = '[a-z0-9][a-z0-9\\-]{0,62}'

export function addMachineForm(onIssued) {
  const out = h('div', { class: 'flash' })
  const name = h('input', { name: 'nodeId', required: true, pattern: NODE_NAME, maxlength: 63, placeholder: 'worker-1', autocomplete: 'off', spellcheck: 'false' })
  const ttl = h('input', { name: 'ttlMinutes', type: 'number', min: 1, max: 1440, value: 60, required: true })
  const replace = h('input', { name: 'replace', type: 'checkbox' })
  const submit = h('button', { type: 'submit', class: 'primary' }, 'Issue join command')
  const form = h(
    'form',
    { class: 'inline-form', hidden: true },
    h('label', {}, 'Name ', name),
    h('label', {}, 'Valid for (minutes) ', ttl),
    h('label', { class: 'check' }, replace, ' replace an unused enrollment'),
    submit,
  )
  const open = h('button', { type: 'button', class: 'primary', onclick: () => toggle() }, 'Add a machine')
  const toggle = () => {
    form.hidden = !form.hidden
    if (!form.hidden) name.focus()
  }
  form.addEventListener('submit', (event) => {
    event.preventDefault()
    act(submit, out, 'server.nodes.enroll', 'to add a machine', async () => {
      const enrollment = await api('POST', '/api/v1/nodes/enrollments', { nodeId: name.value.trim(), ttlMinutes: Number(ttl.value), ...(replace.checked ? { replace: true } : {}) })
      name.value = ''
      replace.checked = false
      form.hidden = true
      const platform = await api('GET', '/api/v1/nodes/platform').catch(() => null)
      onIssued()
      await showJoinCommand(enrollment, platform)
    })
  })
  const el = h('div', { class: 'add-machine' }, open, form, out)
  return {
    el,
    /** Off when remote dispatch is off: the panel says how to turn it on instead. */
    setEnabled(enabled) {
      open.disabled = !enabled
      if (!enabled) form.hidden = true
    },
  }
}

/** The command an operator runs on the new machine (without the token), and what to say about pinning. */
function joinCommand(e, platform) {
  if (e.joinCommand) return { command: e.joinCommand, note: null }
  const listener = platform?.enrollment
  if (listener?.url && listener.fingerprint) {
    return { command: `muster worker join --platform-url ${listener.url} --node-id ${e.nodeId} --platform-fingerprint ${listener.fingerprint}`, note: null }
  }
  if (location.protocol === 'https:') {
    return {
      command: `muster worker join --platform-url ${location.origin} --node-id ${e.nodeId} --platform-ca-file PLATFORM-CA.pem`,
      note: 'This Platform has no enrollment listener, so it publishes no fingerprint to pin: give the CA that signed its certificate with --platform-ca-file, or leave the flag out when the system roots trust it.',
    }
  }
  return {
    command: `muster worker join --platform-url https://PLATFORM:PORT --node-id ${e.nodeId} --platform-fingerprint sha256:…`,
    note: 'This Platform serves plain http and has no enrollment listener, and worker join only talks HTTPS. Restart it with --enrollment-port 7443: it then publishes the URL and the fingerprint to put here.',
  }
}

/** The curl-and-sh line with its copy button, or why there is none. */
function bootstrapSection(e) {
  if (!e.bootstrapCommand) {
    return h(
      'div',
      {},
      e.joinCommand ? h('p', { class: 'muted small' }, 'No one-line bootstrap: this Platform runs from source and has no muster binary to serve.') : '',
      h('p', {}, 'Run this on the new machine, where muster is installed:'),
    )
  }
  const line = h('code', { class: 'bootstrap-command' }, e.bootstrapCommand)
  const copied = h('span', { class: 'muted small', 'aria-live': 'polite' })
  const copy = h('button', { type: 'button' }, 'Copy bootstrap line')
  copy.addEventListener('click', async () => {
    copied.textContent = (await copyText(e.bootstrapCommand, line)) ? 'Copied.' : 'Select the line and copy it by hand.'
  })
  return h(
    'div',
    {},
    h('p', {}, 'On a machine with only curl and sh, run this as root: it checks the Platform, installs the worker role, asks for the token below without echoing it, joins and starts the Agent. Add ', code('--root DIR'), ' or ', code('--no-start'), ' at the end for install.sh; running it again is harmless.'),
    h('pre', { class: 'command' }, line),
    h('p', { class: 'row' }, copy, ' ', copied),
    h('p', {}, 'Or, where muster is installed:'),
  )
}

async function showJoinCommand(e, platform) {
  const { command, note } = joinCommand(e, platform)
  const text = h('code', { class: 'join-command' }, command)
  const copied = h('span', { class: 'muted small', 'aria-live': 'polite' })
  const copy = h('button', { type: 'button' }, 'Copy')
  copy.addEventListener('click', async () => {
    copied.textContent = (await copyText(command, text)) ? 'Copied.' : 'Select the command and copy it by hand.'
  })
  const token = h('code', { class: 'join-token' }, e.token)
  const tokenCopied = h('span', { class: 'muted small', 'aria-live': 'polite' })
  const copyToken = h('button', { type: 'button' }, 'Copy token')
  copyToken.addEventListener('click', async () => {
    tokenCopied.textContent = (await copyText(e.token, token)) ? 'Copied.' : 'Select the token and copy it by hand.'
  })
  await modal(
    `Join command for ${e.nodeId}`,
    h(
      'div',
      {},
      h('p', {}, 'The token works once, only for the name ', code(e.nodeId), ', until ', h('time', { datetime: e.expiresAt }, new Date(e.expiresAt).toLocaleString()), '.'),
      bootstrapSection(e),
      h('pre', { class: 'command' }, text),
      h('p', { class: 'row' }, copy, ' ', copied),
      h('p', {}, 'It asks for the enrollment token without echoing it; paste this one (or put it in a file readable only by root and add ', code('--enrollment-token-file FILE'), '):'),
      h('pre', { class: 'command' }, token),
      h('p', { class: 'row' }, copyToken, ' ', tokenCopied),
      note ? notice('warn', note) : '',
      h('p', { class: 'muted small' }, 'The token is shown only now and is not kept by this page. Lost it? Add the machine again with “replace an unused enrollment” ticked.'),
    ),
    [{ label: 'Done', value: true, class: 'primary' }],
  )
}
