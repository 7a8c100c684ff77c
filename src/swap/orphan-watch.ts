// An engine whose supervisor dies exits, even when its event loop cannot run
//: the IPC 'disconnect' (src/swap/engine.ts) gives the clean stop,
// but an engine stuck in a synchronous call (a runaway match, a blocking read)
// never sees it and would keep its ports for good. A worker thread, which runs
// beside a stuck main thread, watches the parent pid and kills the process
// once the clean stop has had its time.
import { log } from '../log.ts'

/** How long the clean stop (leases given up, heartbeats flushed) gets after the supervisor is gone. */
export const ORPHAN_GRACE_MS = 10_000

// Plain JavaScript: the worker is made from a Blob, so the compiled binary needs no second entry point.
const WATCHER = `
const { readFileSync, writeSync } = require('node:fs')
const parentOf = () => {
  try {
    const t = readFileSync('/proc/self/stat', 'utf8')
    return Number(t.slice(t.lastIndexOf(') ') + 2).split(' ')[1])
  } catch {
    return -1
  }
}
self.onmessage = (e) => {
  const { parent, graceMs } = e.data
  let goneAt = 0
  setInterval(() => {
    if (goneAt === 0 && parentOf() !== parent) goneAt = Date.now()
    if (goneAt !== 0 && Date.now() - goneAt > graceMs) {
      // The log (src/log.ts) lives on the stuck thread: this line goes straight to stderr.
      writeSync(2, 'muster engine ' + process.pid + ': its muster serve process (pid ' + parent + ') is gone and the engine did not stop within ' + graceMs / 1000 + ' s; killing it\\n')
      process.kill(process.pid, 'SIGKILL')
    }
  }, 250)
}
`

/** Starts the watch for this engine (Linux: the parent is read from /proc); it never keeps the process alive. */
export function watchSupervisor(graceMs = ORPHAN_GRACE_MS): void {
  if (process.platform !== 'linux') return
  const worker = new Worker(URL.createObjectURL(new Blob([WATCHER], { type: 'application/javascript' })))
  worker.addEventListener('error', (e) => log.warn(`engine ${process.pid}: the supervisor watch did not start: ${e.message}`))
  worker.postMessage({ parent: process.ppid, graceMs })
  ;(worker as unknown as { unref(): void }).unref() // Bun's Worker has unref; the DOM type does not
}
