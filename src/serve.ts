// `muster serve`: opens the Platform, listens, and stops cleanly on SIGINT/SIGTERM.
import { Platform, type PlatformOptions } from './platform.ts'
import { untilStopSignal } from './shutdown.ts'

export async function serve(options: PlatformOptions): Promise<void> {
  const platform = await Platform.open(options)
  try {
    await platform.listen()
  } catch (e) {
    await platform.close()
    throw e
  }
  await untilStopSignal()
  await platform.close()
}
