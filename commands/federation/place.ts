import { defineCommand } from 'citty'
import { afterDashes, clientArgs, intArg, multiArg, UsageError } from '../_args.ts'
import { NAME, officeArg, officeId } from './_office.ts'
import { esc, note, printJson } from '../_out.ts'

export default defineCommand({
  meta: { name: 'place', description: 'Place a project on an office (a signed call): this Platform\'s PROJECT, or the one given after --' },
  args: {
    ...officeArg,
    project: { type: 'positional', required: true, description: 'Project name' },
    replicas: { type: 'string', valueHint: 'N', description: 'How many replicas (default: as the project here)' },
    cpu: { type: 'string', valueHint: 'MILLICORES', description: 'CPU request per replica, millicores' },
    memory: { type: 'string', valueHint: 'MB', description: 'Memory request per replica, MB' },
    env: { type: 'string', valueHint: 'K=V', description: 'An environment variable (repeatable)' },
    ...clientArgs,
  },
  async run({ args, rawArgs }) {
    const id = officeId(args.office)
    if (!NAME.test(args.project)) throw new UsageError(`PROJECT must be lowercase letters, digits and dashes, got "${args.project}"`)
    const given = afterDashes(rawArgs)
    const env: Record<string, string> = {}
    for (const kv of multiArg(rawArgs, 'env')) {
      const m = /^([A-Za-z_][A-Za-z0-9_]*)=(.*)$/s.exec(kv)
      if (!m) throw new UsageError(`--env must be NAME=VALUE, got "${kv}"`)
      env[m[1]!] = m[2]!
    }
    const replicas = intArg(args, 'replicas', 0, 1000)
    const cpu = intArg(args, 'cpu', 0, 1_000_000)
    const memory = intArg(args, 'memory', 0, 16_777_216)
    const { clientFrom } = await import('../_client.ts')
    const client = clientFrom(args)
    let spec
    if (given.length > 0) {
      if (replicas === undefined) throw new UsageError('--replicas is needed with a command after --')
      spec = { name: args.project, command: given, env, replicas, cpu, memory }
    } else {
      // No command: send this Platform's own project of that name, flags overriding.
      const p = await client.projects.show(args.project)
      spec = { name: p.name, command: p.command, env: { ...p.env, ...env }, replicas: replicas ?? p.replicas, cpu: cpu ?? p.cpu, memory: memory ?? p.memory }
    }
    const r = await client.federation.place(id, spec)
    if (args.json) return printJson(r)
    note(esc`Placed ${r.project.name} on office ${r.officeId}: ${r.project.state}, ${r.project.running}/${r.project.replicas} running${r.project.detail ? ` (${r.project.detail})` : ''}`)
  },
})
