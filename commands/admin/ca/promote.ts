import { defineCommand } from 'citty'
import { dataDirArg, jsonArg } from '../../_args.ts'
import { note, printJsonLine } from '../../_out.ts'

export default defineCommand({
  meta: { name: 'promote', description: 'Make the prepared CA the Platform CA (two days after prepare); server certificates are issued from it' },
  args: { ...dataDirArg, ...jsonArg, force: { type: 'boolean', description: 'Promote before two days have passed (nodes that have not refreshed must join again)' } },
  async run({ args }) {
    const { openPlatformVault } = await import('../../../src/pki/host-vault.ts')
    const { promoteNextCa } = await import('../../../src/pki/ca-replace.ts')
    const { DataDir, resolveDataDir } = await import('../../../src/datadir.ts')
    const host = await openPlatformVault(new DataDir(resolveDataDir(args['data-dir'])))
    const r = await promoteNextCa(host.vault, Date.now(), Boolean(args.force)).finally(() => host.close())
    if (args.json) return void printJsonLine(r)
    note(
      `The Platform CA is now ${r.current} (the previous one, ${r.previous}, is kept in platform/ca-previous/).\n` +
        'A running Platform issues its certificates from it within a minute; new joins use the new pin (muster nodes platform).',
    )
  },
})
