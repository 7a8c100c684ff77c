import { defineCommand } from 'citty'
import { clientArgs, intArg, multiArg, UsageError } from '../_args.ts'

export default defineCommand({
  meta: { name: 'add', description: 'Sign a muster binary with your release key (here, on this machine) and upload it with its manifest {version, arch, sha256, size, sequence}' },
  args: {
    binary: { type: 'positional', required: true, description: 'The muster binary to release' },
    key: { type: 'string', valueHint: 'FILE', description: 'Your release key (muster releases keygen); it never leaves this machine', required: true },
    version: { type: 'string', valueHint: 'X.Y.Z', description: 'Its version (default: what `BINARY version --json` says)' },
    arch: { type: 'string', valueHint: 'x64|arm64', description: 'Its architecture (default: from the binary)' },
    sequence: { type: 'string', valueHint: 'N', description: 'Its sequence: nodes never install a lower one than they have (default: the highest released + 1)' },
    mirror: { type: 'string', valueHint: 'URL', description: 'Another place nodes may download it from (repeatable); the signature decides, not the server' },
    level: { type: 'string', valueHint: 'N', description: 'zstd level 1–19 for the upload and full downloads (default 9)' },
    ...clientArgs,
  },
  async run({ args, rawArgs }) {
    if (!args.key) throw new UsageError('--key FILE is required (make one with muster releases keygen --out FILE)')
    if (args.arch !== undefined && args.arch !== 'x64' && args.arch !== 'arm64') throw new UsageError(`--arch must be x64 or arm64, got "${args.arch}"`)
    const sequence = intArg(args, 'sequence', 1, Number.MAX_SAFE_INTEGER)
    const level = intArg(args, 'level', 1, 19)
    const mirrors = multiArg(rawArgs, 'mirror')
    for (const m of mirrors) if (!/^https?:\/\/\S+$/.test(m)) throw new UsageError(`--mirror must be an http(s) URL, got "${m}"`)
    const { readKeyFile } = await import('./_key.ts')
    const key = await readKeyFile(args.key)
    const { clientFrom } = await import('../_client.ts')
    const { publishRelease } = await import('../../src/releases/publish.ts')
    const r = await publishRelease(clientFrom(args), { binary: args.binary, key, version: args.version, arch: args.arch as 'x64' | undefined, sequence, mirrors, level, progress: (l) => process.stderr.write(`${l}\n`) })
    const { printJson, printLine } = await import('../_out.ts')
    if (args.json) return printJson(r)
    printLine(`released ${r.version} for ${r.arch}: sequence ${r.sequence}, sha256 ${r.sha256}, ${r.size} bytes (${r.compressedSize} to download whole)`)
    process.stderr.write(`Roll it out: muster rollouts start ${r.version}\n`)
  },
})
