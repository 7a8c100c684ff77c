// Progress for slow multi-step commands: a spinner per step on a terminal,
// one line per step otherwise.
import type { DemoReporter } from '../src/demo/demo.ts'
import { esc, printLine } from './_out.ts'

export function stepReporter(): DemoReporter {
  const tty = Boolean(process.stdout.isTTY)
  return {
    async step<T>(title: string, fn: () => Promise<T>): Promise<T> {
      const t0 = Date.now()
      const took = () => `${((Date.now() - t0) / 1000).toFixed(1)}s`
      if (tty) {
        const { spinner } = await import('@clack/prompts')
        const s = spinner()
        s.start(title)
        try {
          const v = await fn()
          s.stop(esc`${title} (${took()})`)
          return v
        } catch (e) {
          s.error(esc`${title}: failed`)
          throw e
        }
      }
      printLine(esc`… ${title}`)
      try {
        const v = await fn()
        printLine(esc`✔ ${title} (${took()})`)
        return v
      } catch (e) {
        printLine(esc`✖ ${title}: failed`)
        throw e
      }
    },
  }
}
