import { defineCommand } from 'citty'
import { jsonArg, UsageError } from '../_args.ts'

export default defineCommand({
  meta: { name: 'keygen', description: 'Make a release key (Ed25519) in a 0600 file and print its public half. Keep the file off the Platform: whoever holds it can release code to every node' },
  args: {
    out: { type: 'string', valueHint: 'FILE', description: 'Where to write the key (refused if it exists)', required: true },
    ...jsonArg,
  },
  async run({ args }) {
    if (!args.out) throw new UsageError('--out FILE is required')
    const { existsSync, openSync, writeSync, closeSync, fsyncSync } = await import('node:fs')
    if (existsSync(args.out)) throw new UsageError(`${args.out} exists: refusing to overwrite a release key; choose another --out`)
    const { newReleaseKey } = await import('../../src/signed/releases.ts')
    const key = newReleaseKey()
    const fd = openSync(args.out, 'wx', 0o600)
    try {
      writeSync(fd, `${JSON.stringify(key, null, 2)}\n`)
      fsyncSync(fd)
    } finally {
      closeSync(fd)
    }
    const { printJson, printLine } = await import('../_out.ts')
    if (args.json) return printJson({ kid: key.kid, publicKey: key.publicKey, file: args.out })
    printLine(`release key ${key.kid}: ${key.publicKey}`)
    process.stderr.write(`The private key is in ${args.out} (mode 0600). Sign releases with it (muster releases add BINARY --key ${args.out}); nodes take the first release key they hear of, and after that only keys it endorses (muster releases endorse-key).\n`)
  },
})
