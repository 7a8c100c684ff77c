import { defineCommand } from 'citty'
import { afterDashes, clientArgs, intArg, multiArg, UsageError } from '../_args.ts'
import { NAME, officeArg, officeId } from './_office.ts'

export default defineCommand({
  meta: { name: 'place', description: 'Place a project on an office (a signed call); it runs there on the office\'s own nodes' },
  args: {
    ...officeArg,
    project: { type: 'positional', required: true, description: 'Project name' },
    replicas: { type: 'string', required: true, description: 'How many replicas' },
    cpu: { type: 'string', description: 'CPU request per replica, millicores' },
    memory: { type: 'string', description: 'Memory request per replica, MB' },
    env: { type: 'string', valueHint: 'K=V', description: 'An environment variable (repeatable)' },
    ...clientArgs,
  },
  async run({ args, rawArgs }) {
    const id = officeId(args.office)
    if (!NAME.test(args.project)) throw new UsageError(`PROJECT must be lowercase letters, digits and dashes, got "${args.project}"`)
    const command = afterDashes(rawArgs)
    if (command.length === 0) throw new UsageError('give the command after --, e.g. `muster federation place office-a web --replicas 2 -- ./server --port 8080`')
    const env: Record<string, string> = {}
    for (const kv of multiArg(rawArgs, 'env')) {
      const m = /^([A-Za-z_][A-Za-z0-9_]*)=(.*)$/s.exec(kv)
      if (!m) throw new UsageError(`--env must be NAME=VALUE, got "${kv}"`)
      env[m[1]!] = m[2]!
    }
    const spec = { name: args.project, command, env, replicas: intArg(args, 'replicas', 0, 1000)!, cpu: intArg(args, 'cpu', 0, 1_000_000), memory: intArg(args, 'memory', 0, 16_777_216) }
    const { clientFrom } = await import('../_client.ts')
    const { printJson } = await import('../_out.ts')
    const r = await clientFrom(args).federation.place(id, spec)
    if (args.json) return printJson(r)
    process.stderr.write(`Placed ${r.project.name} on office ${r.officeId}: ${r.project.state}, ${r.project.running}/${r.project.replicas} running${r.project.detail ? ` (${r.project.detail})` : ''}\n`)
  },
})
