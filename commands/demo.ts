import { defineCommand } from 'citty'

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
      void demo.stop().then(() => process.exit(130))
    }
    process.on('SIGINT', onSignal)
    process.on('SIGTERM', onSignal)
    try {
      if (demo instanceof HaDemo) printHaDemo(await demo.startHa())
      else printDemo(await demo.start())
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
