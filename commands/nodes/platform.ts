import { defineCommand } from 'citty'
import { clientArgs } from '../_args.ts'

export default defineCommand({
  meta: { name: 'platform', description: 'Where nodes enroll (URL, addresses, port, fingerprint to pin) and the Platforms sharing the store' },
  args: { ...clientArgs },
  async run({ args }) {
    const { clientFrom } = await import('../_client.ts')
    const { printJson, printLine } = await import('../_out.ts')
    const r = await clientFrom(args).nodes.platform()
    if (args.json) return printJson(r)
    printLine(`remote dispatch: ${r.remoteDispatch ? 'on' : 'off'}`)
    if (!r.enrollment) printLine('enrollment listener: none (start serve with --enrollment-port)')
    else {
      printLine(`enrollment URL:  ${r.enrollment.url}`)
      printLine(`addresses:       ${r.enrollment.addresses.join(', ')}`)
      printLine(`port:            ${r.enrollment.port}`)
      printLine(`fingerprint:     ${r.enrollment.fingerprint}`)
    }
    if ((r.platforms?.length ?? 0) < 2) return
    printLine(`platforms:       ${r.platforms!.length} live on this store`)
    for (const p of r.platforms!) printLine(`  ${p.id}${p.self ? ' (this one)' : ''}  ${p.url}${p.enrollmentUrl ? `  enroll ${p.enrollmentUrl}` : ''}  runs: ${p.runs.join(', ') || '-'}`)
  },
})
