import { defineCommand } from 'citty'
import { dataDirArg, jsonArg } from './_args.ts'
import { esc, printJson, printLine } from './_out.ts'

export default defineCommand({
  meta: { name: 'doctor', description: 'Check this machine’s muster installation: role, receipt, data, join, Agent port, Platform, the node’s credential, trust keys (exit 1 when a check fails)' },
  args: {
    ...dataDirArg,
    root: { type: 'string', valueHint: 'DIR', description: 'Read the install receipt under DIR (DIR/etc/muster/receipt.json)' },
    ...jsonArg,
  },
  async run({ args }) {
    const { runDoctor } = await import('../src/doctor/doctor.ts')
    const { MusterError } = await import('../src/errors.ts')
    const report = await runDoctor({ dataDir: args['data-dir'], root: args.root })
    if (args.json) printJson(report)
    else {
      printLine(esc`muster doctor: ${report.role} at ${report.dataDir}`)
      const width = Math.max(...report.checks.map((c) => c.name.length))
      for (const c of report.checks) printLine(esc`${c.status.padEnd(4)}  ${c.name.padEnd(width)}  ${c.message}`)
      for (const n of report.notes) printLine(esc`note  ${n}`)
    }
    if (!report.ok) throw new MusterError('not-configured', `${report.checks.filter((c) => c.status === 'fail').length} check(s) failed`)
  },
})
