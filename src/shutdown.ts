// Long-running commands (serve, agent) stop cleanly on SIGINT or SIGTERM.
import { log } from './log.ts'

/** Resolves with the signal's name on the first SIGINT or SIGTERM. */
export function untilStopSignal(): Promise<string> {
  return new Promise((resolve) => {
    const stop = (sig: string) => {
      log.info(`${sig}: stopping`)
      resolve(sig)
    }
    process.once('SIGINT', () => stop('SIGINT'))
    process.once('SIGTERM', () => stop('SIGTERM'))
  })
}
