import { defineCommand } from 'citty'
import { afterDashes, checkName, clientArgs, intArg, labelArgs, multiArg, UsageError } from '../_args.ts'
import { esc, note, printJsonLine } from '../_out.ts'

export default defineCommand({
  meta: { name: 'deploy', description: 'Create or update a project: `deploy NAME --replicas N -- CMD [ARGS...]` (an update rolls)' },
  args: {
    name: { type: 'positional', required: true, description: 'Project name, like web' },
    replicas: { type: 'string', valueHint: 'N', required: true, description: 'How many copies to run' },
    cpu: { type: 'string', valueHint: 'MILLICORES', description: 'CPU each replica needs (default 100)' },
    memory: { type: 'string', valueHint: 'MB', description: 'Memory each replica needs (default 64)' },
    env: { type: 'string', valueHint: 'K=V', description: 'Environment for the command (repeatable)' },
    'node-label': { type: 'string', valueHint: 'KEY=VALUE', description: 'Run only on nodes with this label, like role=build (repeatable: every one)' },
    ...clientArgs,
  },
  async run({ args, rawArgs }) {
    checkName(args.name, 'NAME')
    const command = afterDashes(rawArgs)
    if (command.length === 0) throw new UsageError('give the command after --, like: muster projects deploy web --replicas 2 -- /usr/bin/python3 -m http.server')
    const env: Record<string, string> = {}
    for (const kv of multiArg(rawArgs, 'env')) {
      const i = kv.indexOf('=')
      if (i <= 0) throw new UsageError(`--env needs KEY=VALUE, got "${kv}"`)
      env[kv.slice(0, i)] = kv.slice(i + 1)
    }
    const replicas = intArg(args, 'replicas', 0, 10_000)!
    const cpu = intArg(args, 'cpu', 1, 1_000_000)
    const memory = intArg(args, 'memory', 1, 10_000_000)
    const nodeLabels = await labelArgs(rawArgs, 'node-label')
    const { clientFrom } = await import('../_client.ts')
    const p = await clientFrom(args).projects.deploy({ name: args.name, command, env, replicas, cpu, memory, ...(Object.keys(nodeLabels).length > 0 ? { nodeLabels } : {}) })
    if (args.json) return void printJsonLine(p)
    const placed = p.placements.filter((x) => x.node).length
    note(esc`Project ${p.name} revision ${p.revision}: ${placed}/${p.replicas} replica(s) placed${p.reason ? ` (${p.reason}${p.shortfall ? `, shortfall ${p.shortfall}` : ''})` : ''}. Watch it with \`muster projects show ${p.name}\`.`)
  },
})
