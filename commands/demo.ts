import { defineCommand } from 'citty'

export default defineCommand({
  meta: { name: 'demo', description: 'A Platform and two local workers, end to end, in a temp directory (Ctrl-C stops it all)' },
  args: { once: { type: 'boolean', description: 'Run every step, print a summary, stop everything and exit (0 only if all worked)' } },
  async run({ args }) {
    const { Demo } = await import('../src/demo/demo.ts')
    const { MusterError } = await import('../src/errors.ts')
    const { stepReporter } = await import('./_steps.ts')
    const { printLine } = await import('./_out.ts')
    const demo = new Demo(stepReporter())
    let stopping = false
    const onSignal = () => {
      if (stopping) return
      stopping = true
      void demo.stop().then(() => process.exit(130))
    }
    process.on('SIGINT', onSignal)
    process.on('SIGTERM', onSignal)
    try {
      const r = await demo.start()
      printLine()
      printLine(`muster is running in ${r.dir}`)
      printLine(`  dashboard and API:  ${r.apiUrl}  (log in as superadmin)`)
      printLine(`  enrollment:         ${r.enrollmentUrl}  (pin ${r.fingerprint})`)
      printLine(`  superadmin password: ${r.passwordFile}`)
      printLine(`  nodes: ${r.nodes.join(', ')}; project ${r.project} runs 2 replicas, one on each`)
      printLine()
      printLine('Try next (in another terminal):')
      printLine(`  export MUSTER_URL=${r.apiUrl}`)
      printLine(`  export MUSTER_TOKEN=$(muster admin api-token --data-dir ${r.dir}/platform)`)
      printLine('  muster nodes list')
      printLine(`  muster projects show ${r.project}`)
      printLine('  muster nodes drain worker-1        # its replica moves to worker-2')
      printLine('  muster projects deploy web --replicas 3 -- sh -c "sleep 600"')
      printLine('  muster nodes audit')
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
