// Progress for slow multi-step commands: a spinner per step on a terminal,
// one line per step otherwise.
import type { DemoReporter } from '../src/demo/demo.ts'

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
          s.stop(`${title} (${took()})`)
          return v
        } catch (e) {
          s.error(`${title}: failed`)
          throw e
        }
      }
      process.stdout.write(`… ${title}\n`)
      try {
        const v = await fn()
        process.stdout.write(`✔ ${title} (${took()})\n`)
        return v
      } catch (e) {
        process.stdout.write(`✖ ${title}: failed\n`)
        throw e
      }
    },
  }
}
