// Steering an SO_REUSEPORT group to the newest engine. Its listener joined the
// group last, beside the old engine's one listener (swaps run one at a time),
// so it is member 1; a one-instruction BPF program `ret #1` then sends every
// new connection to it. After the old listener closes, the new one is member
// 0 and alone; `ret #1` is then out of range, which the kernel answers by
// choosing among the members as usual: the one left. See engine.ts for why.
import { log } from '../log.ts'
import { socketCallsAvailable, steerGroup } from './libc.ts'
import { ownListenerFds } from './sockets.ts'

const NEWEST = 1

/** Points the reuseport group(s) on `port` at this process's listener(s); how many were steered. */
export async function steerToNewest(port: number): Promise<number> {
  if (!(await socketCallsAvailable())) {
    log.warn(`engine swap: cannot steer port ${port} here (no socket calls); the old engine drains best effort`)
    return 0
  }
  let steered = 0
  for (const fd of ownListenerFds(port)) {
    if (steerGroup(fd, NEWEST)) steered++
    else log.warn(`engine swap: steering port ${port} failed; the old engine drains best effort`)
  }
  return steered
}
