import { defineCommand } from 'citty'
import { dataDirArg, jsonArg } from '../../_args.ts'
import { note, printJsonLine } from '../../_out.ts'

export default defineCommand({
  meta: { name: 'prepare', description: 'Make the next Platform CA; nodes learn its pin at their daily trust refresh (works while serve runs)' },
  args: { ...dataDirArg, ...jsonArg },
  async run({ args }) {
    const { openPlatformVault } = await import('../../../src/pki/host-vault.ts')
    const { prepareNextCa } = await import('../../../src/pki/ca-replace.ts')
    const { DataDir, resolveDataDir } = await import('../../../src/datadir.ts')
    const host = await openPlatformVault(new DataDir(resolveDataDir(args['data-dir'])))
    const r = await prepareNextCa(host.vault, Date.now()).finally(() => host.close())
    if (args.json) return void printJsonLine(r)
    note(
      `Prepared the next Platform CA ${r.next} (the current one is ${r.current}).\n` +
        'The running Platform names it to nodes within a minute; every node that refreshes its trust (daily) accepts it.\n' +
        `Then, after ${r.promotableAt}: muster admin ca promote --data-dir ${args['data-dir'] ?? '…'}\n` +
        'New joins keep using the current pin until then.',
    )
  },
})
