import { defineCommand } from 'citty'
import { clientArgs } from '../_args.ts'

export default defineCommand({
  meta: { name: 'platform', description: 'Where nodes enroll: the listener URL, addresses, port and the fingerprint to pin' },
  args: { ...clientArgs },
  async run({ args }) {
    const { clientFrom } = await import('../_client.ts')
    const { printJson, printLine } = await import('../_out.ts')
    const r = await clientFrom(args).nodes.platform()
    if (args.json) return printJson(r)
    printLine(`remote dispatch: ${r.remoteDispatch ? 'on' : 'off'}`)
    if (!r.enrollment) return printLine('enrollment listener: none (start serve with --enrollment-port)')
    printLine(`enrollment URL:  ${r.enrollment.url}`)
    printLine(`addresses:       ${r.enrollment.addresses.join(', ')}`)
    printLine(`port:            ${r.enrollment.port}`)
    printLine(`fingerprint:     ${r.enrollment.fingerprint}`)
  },
})
