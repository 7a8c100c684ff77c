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
      const bin = await invokedAs()
      printLine('Try next (in another terminal):')
      printLine(`  export MUSTER_URL=${r.apiUrl}`)
      printLine(`  export MUSTER_TOKEN=$(${bin} admin api-token --data-dir ${r.platformDir})`)
      printLine(`  ${bin} nodes list`)
      printLine(`  ${bin} projects show ${r.project}`)
      printLine(`  ${bin} nodes drain worker-1        # its replica moves to worker-2`)
      printLine(`  ${bin} projects deploy web --replicas 3 -- sh -c "sleep 600"`)
      printLine(`  ${bin} nodes audit`)
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
