import { defineCommand } from 'citty'
import { clientArgs } from '../_args.ts'
import { esc, printJson, printLine, printTable } from '../_out.ts'

export default defineCommand({
  meta: { name: 'provisions', description: 'Machines this Platform created (creating, booting, enrolling, ready, failed, released), or one of them' },
  args: { id: { type: 'positional', required: false, description: 'A provision id (prv-…)' }, ...clientArgs },
  async run({ args }) {
    const { clientFrom } = await import('../_client.ts')
    const client = clientFrom(args)
    if (args.id) {
      const p = await client.cloud.provisionInfo(args.id)
      if (args.json) return printJson(p)
      printLine(esc`${p.id}  ${p.name}  ${p.state}${p.reason ? ` (${p.reason})` : ''}`)
      printLine(esc`  ${p.provider} ${p.region} ${p.size}, role ${p.role}, requested by ${p.requestedBy ?? '-'} (${p.origin}) at ${p.createdAt}`)
      printLine(esc`  machine ${p.machineId ?? '-'} ${p.machineStatus ?? ''} ${p.address ?? ''}`.trimEnd())
      printLine(esc`  node ${p.node ? `${p.node.name} ${p.node.state}` : 'not enrolled yet'}`)
      return
    }
    const r = await client.cloud.provisions()
    if (args.json) return printJson(r)
    printTable(['id', 'name', 'provider', 'state', 'machine', 'created', 'reason'], r.provisions.map((p) => [p.id, p.name, p.provider, p.state, p.machineId, p.createdAt, p.reason]))
  },
})
