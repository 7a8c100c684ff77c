import { defineCommand } from 'citty'

/** How to run this binary again from this shell: `muster` when that is what PATH finds, else its path (./dist/muster). */
async function invokedAs(): Promise<string> {
  const { relative, isAbsolute } = await import('node:path')
  const self = process.execPath
  if (Bun.which('muster') === self) return 'muster'
  const rel = relative(process.cwd(), self)
  return rel && !rel.startsWith('..') && !isAbsolute(rel) ? `./${rel}` : self
}

export default defineCommand({
  meta: { name: 'demo', description: 'A Platform and two local workers, end to end, in a temp directory (Ctrl-C stops it all)' },
  args: {
    once: { type: 'boolean', description: 'Run every step, print a summary, stop everything and exit (0 only if all worked)' },
    ha: { type: 'boolean', description: 'Two Platforms on a throwaway PostgreSQL (needs its server binaries); kills one midway and shows the fleet carry on' },
  },
  async run({ args }) {
    const { Demo } = await import('../src/demo/demo.ts')
    const { HaDemo } = await import('../src/demo/demo-ha.ts')
    const { MusterError } = await import('../src/errors.ts')
    const { stepReporter } = await import('./_steps.ts')
    const { printLine } = await import('./_out.ts')
    const { printDemo, printHaDemo } = await import('./_demo-summary.ts')
    const demo = args.ha ? new HaDemo(stepReporter()) : new Demo(stepReporter())
    let stopping = false
    const onSignal = () => {
      if (stopping) return
      stopping = true
      void demo
        .stop()
        .then(async () => {
          const { printLine, outputDelivered } = await import('./_out.ts')
          printLine('\ndemo: stopped everything and removed its directory.')
          await outputDelivered()
        })
        .finally(() => process.exit(130))
    }
    process.on('SIGINT', onSignal)
    process.on('SIGTERM', onSignal)
    try {
      const bin = await invokedAs()
      if (demo instanceof HaDemo) printHaDemo(await demo.startHa(), bin)
      else printDemo(await demo.start(), bin)
      if (args.once) {
        printLine()
        printLine('demo: every step worked; stopping.')
        return
      }
      printLine()
      printLine('Press Ctrl-C to stop everything and remove the directory.')
      for (;;) {
        await Bun.sleep(1000)
        const gone = demo.exited()
        if (gone && !stopping) throw new MusterError('internal', `the demo broke: ${gone}`)
      }
    } finally {
      if (!stopping) {
        stopping = true
        await demo.stop()
      }
    }
  },
})
