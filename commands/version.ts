import { defineCommand } from 'citty'
import { jsonArg } from './_args.ts'
import { esc, printJsonLine, printLine } from './_out.ts'

export default defineCommand({
  meta: { name: 'version', description: 'Print the version of this binary' },
  args: { ...jsonArg },
  async run({ args }) {
    const { VERSION } = await import('../src/version.ts')
    if (args.json) return void printJsonLine({ version: VERSION })
    printLine(esc`muster ${VERSION}`)
  },
})
