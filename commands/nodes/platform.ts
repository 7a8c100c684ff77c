import { defineCommand } from 'citty'
import { clientArgs } from '../_args.ts'
import { clean, esc, printJson, printLine } from '../_out.ts'

export default defineCommand({
  meta: { name: 'platform', description: 'Where nodes enroll: the listener URL, addresses, port, the pin, the Platform CA, and the Platforms sharing the store' },
  args: { ...clientArgs },
  async run({ args }) {
    const { clientFrom } = await import('../_client.ts')
    const { consola } = await import('consola')
    const r = await clientFrom(args).nodes.platform()
    // Warnings go to stderr in both modes, so --json stays machine-readable and people still see them.
    for (const w of r.warnings ?? []) consola.warn(clean(w))
    if (args.json) return printJson(r)
    printLine(esc`remote dispatch: ${r.remoteDispatch ? 'on' : 'off'}`)
    printLine(esc`platform CA:     ${r.ca.fingerprint} (valid until ${r.ca.notAfter})`)
    if (r.ca.next) printLine(esc`next CA:         ${r.ca.next.fingerprint} (prepared; nodes learn it at their next trust refresh)`)
    if (!r.enrollment) printLine('enrollment listener: none (start serve with --enrollment-port)')
    else {
      printLine(esc`enrollment URL:  ${r.enrollment.url}`)
      printLine(esc`addresses:       ${r.enrollment.addresses.join(', ')}`)
      printLine(esc`port:            ${r.enrollment.port}`)
      printLine(esc`fingerprint:     ${r.enrollment.fingerprint}  (give it to worker join --platform-fingerprint)`)
      if (r.enrollment.fingerprint !== r.enrollment.caFingerprint) printLine(esc`                 (the listener still presents its certificate from before the Platform CA; nodes move to the CA pin at their next trust refresh)`)
    }
    if ((r.platforms?.length ?? 0) < 2) return
    printLine(esc`platforms:       ${r.platforms!.length} live on this store`)
    for (const p of r.platforms!) printLine(esc`  ${p.id}${p.self ? ' (this one)' : ''}  ${p.url}${p.enrollmentUrl ? `  enroll ${p.enrollmentUrl}` : ''}  runs: ${p.runs.join(', ') || '-'}`)
  },
})
