// Temporary directories that remove themselves, and polling without bare sleeps.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

export function tmpDir(prefix = 'muster-'): { path: string; [Symbol.dispose](): void } {
  const path = mkdtempSync(join(tmpdir(), prefix))
  return { path, [Symbol.dispose]: () => rmSync(path, { recursive: true, force: true }) }
}

/** Polls until the predicate returns a truthy value (which is returned), or fails after `timeoutMs`. */
export async function waitFor<T>(predicate: () => T | Promise<T>, opts: { timeoutMs?: number; intervalMs?: number; what?: string } = {}): Promise<NonNullable<T>> {
  const deadline = Date.now() + (opts.timeoutMs ?? 30_000)
  let last: unknown
  for (;;) {
    try {
      const v = await predicate()
      if (v) return v as NonNullable<T>
    } catch (e) {
      last = e
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${opts.what ?? 'condition'}${last ? `: ${(last as Error).message}` : ''}`)
    await Bun.sleep(opts.intervalMs ?? 25)
  }
}
