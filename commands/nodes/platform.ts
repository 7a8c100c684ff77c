import { defineCommand } from 'citty'
import { clientArgs } from '../_args.ts'

export default defineCommand({
  meta: { name: 'platform', description: 'Where nodes enroll: the listener URL, addresses, port, the pin, and the Platform CA' },
  args: { ...clientArgs },
  async run({ args }) {
    const { clientFrom } = await import('../_client.ts')
    const { printJson, printLine } = await import('../_out.ts')
    const { consola } = await import('consola')
    const r = await clientFrom(args).nodes.platform()
    // Warnings go to stderr in both modes, so --json stays machine-readable and people still see them.
    for (const w of r.warnings ?? []) consola.warn(w)
    if (args.json) return printJson(r)
    printLine(`remote dispatch: ${r.remoteDispatch ? 'on' : 'off'}`)
    printLine(`platform CA:     ${r.ca.fingerprint} (valid until ${r.ca.notAfter})`)
    if (r.ca.next) printLine(`next CA:         ${r.ca.next.fingerprint} (prepared; nodes learn it at their next trust refresh)`)
    if (!r.enrollment) return printLine('enrollment listener: none (start serve with --enrollment-port)')
    printLine(`enrollment URL:  ${r.enrollment.url}`)
    printLine(`addresses:       ${r.enrollment.addresses.join(', ')}`)
    printLine(`port:            ${r.enrollment.port}`)
    printLine(`fingerprint:     ${r.enrollment.fingerprint}  (give it to worker join --platform-fingerprint)`)
    if (r.enrollment.fingerprint !== r.enrollment.caFingerprint) printLine(`                 (the listener still presents its certificate from before the Platform CA; nodes move to the CA pin at their next trust refresh)`)
  },
})
