import { defineCommand } from 'citty'
import { clientArgs } from '../_args.ts'
import { esc, printJson, printLine, printTable } from '../_out.ts'

export default defineCommand({
  meta: { name: 'status', description: 'Connected providers, machines this Platform created, scale-out settings' },
  args: { ...clientArgs },
  async run({ args }) {
    const { clientFrom } = await import('../_client.ts')
    const s = await clientFrom(args).cloud.status()
    if (args.json) return printJson(s)
    printTable(['provider', 'connected', 'account', 'machines', 'since'], s.providers.map((p) => [p.provider, p.connected ? 'yes' : 'no', p.account, p.machines, p.connectedAt]))
    printLine()
    printLine(esc`provisioning: ${s.provisioning.available ? 'available' : `unavailable (${s.provisioning.reason})`}`)
    printLine(esc`machines: ${s.machines.total} (${s.machines.starting} starting, ${s.machines.ready} ready, ${s.machines.failed} failed)`)
    const a = s.scaling
    printLine(esc`scale-out: ${a.enabled ? `on, ${a.provider} ${a.region} ${a.size}, at most ${a.maxMachines} machine(s), cooldown ${a.cooldownMinutes} min` : 'off'}`)
  },
})
