import { defineCommand } from 'citty'
import { dataDirArg, jsonArg } from '../_args.ts'
import { esc, printJson, printLine } from '../_out.ts'

export default defineCommand({
  meta: { name: 'refresh-trust', description: 'Ask the Platform for its trust keys now, over the pinned connection' },
  args: { ...dataDirArg, ...jsonArg },
  async run({ args }) {
    const { refreshTrust } = await import('../../src/agent/trust.ts')
    const { requireJoined } = await import('../../src/agent/files.ts')
    const { DataDir, resolveDataDir } = await import('../../src/datadir.ts')
    const dataDir = new DataDir(resolveDataDir(args['data-dir']))
    const r = await refreshTrust(dataDir, requireJoined(dataDir), Date.now())
    if (args.json) return printJson({ added: r.added, removed: r.removed, keys: r.keys, changes: r.changes })
    if (r.added.length === 0 && r.removed.length === 0) printLine(esc`Trust keys unchanged (${r.keys.length}).`)
    else printLine(esc`Trust keys updated: added ${r.added.join(', ') || 'none'}; removed ${r.removed.join(', ') || 'none'}.`)
    for (const k of r.keys) printLine(esc`  ${k.kid}  valid ${k.notBefore} → ${k.notAfter}`)
    for (const c of r.changes) printLine(esc`The Platform is now authenticated with: ${c}`)
  },
})
