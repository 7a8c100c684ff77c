// Whether a TCP port is free to take, found by a plain bind (no SO_REUSEPORT):
// the API and enrollment ports listen with SO_REUSEPORT so the next engine can
// bind beside them, and that option would otherwise let a second Platform (or
// anything else run by the same user) share a port silently.
import { createServer } from 'node:net'

/** True when nothing listens on host:port (port 0 is always free). */
export function assertPortFree(host: string, port: number): Promise<boolean> {
  if (port === 0) return Promise.resolve(true)
  return new Promise((resolve, reject) => {
    const probe = createServer()
    probe.once('error', (e: NodeJS.ErrnoException) => (e.code === 'EADDRINUSE' ? resolve(false) : reject(e)))
    probe.listen({ port, host, exclusive: true }, () => probe.close(() => resolve(true)))
  })
}
