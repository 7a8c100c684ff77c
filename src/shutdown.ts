// Long-running commands (serve, agent) stop cleanly on SIGINT or SIGTERM.
import { log } from './log.ts'

/**
 * Resolves with the signal's name on the first SIGINT or SIGTERM. The handlers
 * stay installed, so a second signal (a terminal's Ctrl-C reaches serve and its
 * engine, and serve forwards a SIGTERM too) never kills a process mid-shutdown.
 */
export function untilStopSignal(): Promise<string> {
  return new Promise((resolve) => {
    let stopped = false
    const stop = (sig: string) => {
      if (stopped) return
      stopped = true
      log.info(`${sig}: stopping`)
      resolve(sig)
    }
    process.on('SIGINT', () => stop('SIGINT'))
    process.on('SIGTERM', () => stop('SIGTERM'))
  })
}
