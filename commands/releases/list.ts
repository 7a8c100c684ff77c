import { defineCommand } from 'citty'
import { clientArgs } from '../_args.ts'

export default defineCommand({
  meta: { name: 'list', description: 'List the releases (version, sequence, architecture, SHA-256, size) and the release keys' },
  args: { ...clientArgs },
  async run({ args }) {
    const { clientFrom } = await import('../_client.ts')
    const r = await clientFrom(args).releases.list()
    const { printJson, printTable, printLine } = await import('../_out.ts')
    if (args.json) return printJson({ releases: r.releases.map((x) => ({ version: x.version, sequence: x.sequence, arch: x.arch, sha256: x.sha256, size: x.size, compressedSize: x.compressedSize, kid: x.kid, mirrors: x.mirrors, addedAt: x.addedAt })), keys: r.keys })
    if (r.releases.length === 0) printLine('no releases yet: make a release key once with muster releases keygen --out FILE (keep it off the Platform), then muster releases add BINARY --key FILE (docs/upgrading.md)')
    else printTable(['version', 'sequence', 'arch', 'sha256', 'size', 'download', 'key', 'added'], r.releases.map((x) => [x.version, x.sequence, x.arch, x.sha256.slice(0, 16), `${(x.size / 1048576).toFixed(1)} MB`, `${(x.compressedSize / 1048576).toFixed(1)} MB`, x.kid, x.addedAt]))
    if (r.keys.length > 0) {
      printLine()
      printTable(['release key', 'public key', 'endorsed by', 'added'], r.keys.map((k) => [k.kid, k.publicKey, k.endorsedBy ?? '(first key)', k.addedAt]))
    }
  },
})
