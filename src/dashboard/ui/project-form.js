// Deploy a project, or edit one and redeploy it (POST /api/v1/projects, as
// `muster projects deploy` sends it). The command is one line split like a
// shell does (spaces separate arguments; quotes and backslashes keep them
// together); the environment is one KEY=VALUE a line. A changed spec is a new
// revision, which rolls: the old replicas run until the new ones do.
import { api, ApiError, code, h } from './lib.js'

/** The spec of a project as the API shows it, ready to send back (same command, env, requests, labels). */
export function specOf(p) {
  return { name: p.name, command: p.command, env: p.env, replicas: p.replicas, cpu: p.cpu, memory: p.memory, ...(Object.keys(p.nodeLabels ?? {}).length ? { nodeLabels: p.nodeLabels } : {}) }
}

/** Splits a command line into arguments: whitespace separates, '…' is literal, "…" and \ escape. */
export function splitCommand(line) {
  const args = []
  let cur = ''
  let started = false
  for (let i = 0; i < line.length; i++) {
    const c = line[i]
    if (/\s/.test(c)) {
      if (started) args.push(cur)
      cur = ''
      started = false
    } else if (c === "'") {
      const end = line.indexOf("'", i + 1)
      if (end < 0) throw new Error('The command has an unclosed single quote.')
      cur += line.slice(i + 1, end)
      i = end
      started = true
    } else if (c === '"') {
      let j = i + 1
      for (; j < line.length && line[j] !== '"'; j++) {
        if (line[j] === '\\' && j + 1 < line.length && '"\\$`'.includes(line[j + 1])) j++
        cur += line[j]
      }
      if (j >= line.length) throw new Error('The command has an unclosed double quote.')
      i = j
      started = true
    } else if (c === '\\' && i + 1 < line.length) {
      cur += line[++i]
      started = true
    } else {
      cur += c
      started = true
    }
  }
  if (started) args.push(cur)
  return args
}

/** Arguments back into a line that splitCommand reads the same. */
export function joinCommand(args) {
  return args.map((a) => (/^[\w@%+=:,./-]+$/.test(a) ? a : `'${a.replace(/'/g, `'\\''`)}'`)).join(' ')
}

function parsePairs(lines, what) {
  const out = {}
  for (const raw of lines) {
    const line = raw.trim()
    if (!line) continue
    const i = line.indexOf('=')
    if (i <= 0) throw new Error(`${what} needs KEY=VALUE, got "${line}".`)
    out[line.slice(0, i)] = line.slice(i + 1)
  }
  return out
}

/** The dialog; resolves with the deployed project, or undefined when cancelled. */
export function deployDialog(project) {
  const editing = project !== null
  const field = (label, input, hint) => h('label', {}, label, input, hint ? h('span', { class: 'hint' }, hint) : '')
  const f = {
    name: h('input', { name: 'name', required: true, maxlength: 63, autocomplete: 'off', value: project?.name ?? '', readonly: editing, pattern: '[a-z0-9][a-z0-9-]{0,62}' }),
    command: h('input', { name: 'command', required: true, autocomplete: 'off', spellcheck: 'false', value: project ? joinCommand(project.command) : '' }),
    env: h('textarea', { name: 'env', rows: 3, spellcheck: 'false' }),
    replicas: h('input', { name: 'replicas', type: 'number', min: 0, max: 10000, required: true, value: project?.replicas ?? 1 }),
    cpu: h('input', { name: 'cpu', type: 'number', min: 1, max: 1000000, value: project?.cpu ?? 100 }),
    memory: h('input', { name: 'memory', type: 'number', min: 1, max: 10000000, value: project?.memory ?? 64 }),
    labels: h('input', { name: 'nodeLabels', autocomplete: 'off', spellcheck: 'false', value: Object.entries(project?.nodeLabels ?? {}).map(([k, v]) => `${k}=${v}`).join(' ') }),
  }
  f.env.value = Object.entries(project?.env ?? {}).map(([k, v]) => `${k}=${v}`).join('\n')
  const message = h('p', { class: 'error', role: 'alert', hidden: true })
  const submit = h('button', { type: 'submit', class: 'primary' }, editing ? `Redeploy ${project.name}` : 'Deploy')
  const cancel = h('button', { type: 'button' }, 'Cancel')
  const form = h(
    'form',
    { class: 'deploy-form', method: 'dialog' },
    h('h2', {}, editing ? `Edit ${project.name}` : 'Deploy a project'),
    editing ? h('p', { class: 'muted small' }, 'A changed command, environment or request is a new revision: its replicas start, then the old ones stop.') : '',
    field('Name', f.name, editing ? '' : 'lowercase letters, digits and dashes, like web'),
    field('Command', f.command, ['the program and its arguments, like ', code('/usr/bin/python3 -m http.server 8080')]),
    h('div', { class: 'row' }, field('Replicas', f.replicas), field('CPU (millicores)', f.cpu), field('Memory (MB)', f.memory)),
    field('Environment', f.env, 'one KEY=VALUE a line'),
    field('Node labels', f.labels, 'run only on nodes with every one, like role=build'),
    message,
    h('div', { class: 'actions' }, cancel, submit),
  )
  const dialog = h('dialog', { class: 'modal', 'aria-label': editing ? `Edit ${project.name}` : 'Deploy a project' }, form)
  return new Promise((resolve) => {
    const done = (value) => {
      dialog.close()
      dialog.remove()
      resolve(value)
    }
    dialog.addEventListener('cancel', (e) => {
      e.preventDefault()
      done(undefined)
    })
    cancel.addEventListener('click', () => done(undefined))
    form.addEventListener('submit', async (e) => {
      e.preventDefault()
      message.hidden = true
      let body
      try {
        const labels = parsePairs(f.labels.value.split(/\s+/), 'A node label')
        body = {
          name: f.name.value.trim(),
          command: splitCommand(f.command.value),
          env: parsePairs(f.env.value.split('\n'), 'The environment'),
          replicas: Number(f.replicas.value),
          cpu: Number(f.cpu.value),
          memory: Number(f.memory.value),
          ...(Object.keys(labels).length ? { nodeLabels: labels } : {}),
        }
        if (body.command.length === 0) throw new Error('Give the command to run.')
      } catch (err) {
        message.textContent = err.message
        message.hidden = false
        return
      }
      submit.disabled = true
      try {
        done(await api('POST', '/api/v1/projects', body))
      } catch (err) {
        const forbidden = err instanceof ApiError && err.status === 403
        message.textContent = forbidden ? `You need permission server.projects.manage to deploy. (${err.message})` : err.message
        message.hidden = false
      } finally {
        submit.disabled = false
      }
    })
    document.body.append(dialog)
    dialog.showModal()
  })
}
