// `muster serve`: opens the Platform, listens, and stops cleanly on SIGINT/SIGTERM.
import { Platform, type PlatformOptions } from './platform.ts'
import { log } from './log.ts'

export async function serve(options: PlatformOptions): Promise<void> {
  const platform = await Platform.open(options)
  try {
    await platform.listen()
  } catch (e) {
    await platform.close()
    throw e
  }
  await new Promise<void>((resolve) => {
    const stop = (sig: string) => {
      log.info(`${sig}: stopping`)
      resolve()
    }
    process.once('SIGINT', () => stop('SIGINT'))
    process.once('SIGTERM', () => stop('SIGTERM'))
  })
  await platform.close()
}
