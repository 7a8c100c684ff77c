import { defineCommand } from 'citty'
import { dataDirArg, jsonArg } from '../_args.ts'
import { esc, note, printJsonLine } from '../_out.ts'

export default defineCommand({
  meta: { name: 'detach', description: 'On an office host, with the Platform stopped: leave the controller for good, keeping projects, data and accounts' },
  args: { ...dataDirArg, ...jsonArg },
  async run({ args }) {
    const { detach } = await import('../../src/federation/host.ts')
    const { resolveDataDir } = await import('../../src/datadir.ts')
    const r = await detach(resolveDataDir(args['data-dir']))
    if (args.json) return void printJsonLine(r)
    note(
      esc`Detached: this Platform is no longer office ${r.officeId}; its projects, data and local accounts are kept and local login works again.\n` +
        'Two things to do now:\n' +
        '  1. unset MUSTER_JOIN_TOKEN (and MUSTER_CONTROLLER_URL, MUSTER_ADVERTISE_URL) where serve is started, or the next start joins again;\n' +
        esc`  2. on the controller, revoke this office: muster federation revoke ${r.officeId}`,
    )
  },
})
