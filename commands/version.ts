import { defineCommand } from 'citty'
import { jsonArg } from './_args.ts'

export default defineCommand({
  meta: { name: 'version', description: 'Print the version of this binary' },
  args: { ...jsonArg },
  async run({ args }) {
    const { VERSION } = await import('../src/version.ts')
    if (args.json) return void process.stdout.write(`${JSON.stringify({ version: VERSION })}\n`)
    process.stdout.write(`muster ${VERSION}\n`)
  },
})
