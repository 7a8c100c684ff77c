// Helpers for the node side: a Platform with its enrollment listener on
// 127.0.0.1, a spy on what reaches the application, and free ports.
import { createServer } from 'node:net'
import type { PlatformOptions } from '../../src/platform.ts'
import type { EnrollmentListener } from '../../src/listener/listener.ts'
import { startPlatform, type TestPlatform } from './platform.ts'

export interface ListenerPlatform extends TestPlatform {
  listener: EnrollmentListener
  /** https://127.0.0.1:PORT */
  enrollUrl: string
  fingerprint: string
  /** "METHOD /path" of every request the application handled through the listener. */
  appSeen: string[]
}

export async function startListenerPlatform(opts: Partial<PlatformOptions> & { keepDir?: boolean } = {}): Promise<ListenerPlatform> {
  const p = await startPlatform({ enrollmentPort: 0, enrollmentAddresses: ['127.0.0.1'], enrollmentHost: '127.0.0.1', ...opts })
  const listener = p.platform.listener!
  const app = p.platform.app
  const appSeen: string[] = []
  const original = app.handle.bind(app)
  app.handle = (req: Request) => {
    const u = new URL(req.url)
    if (u.hostname === 'enrollment-listener') appSeen.push(`${req.method} ${u.pathname}`)
    return original(req)
  }
  const out = Object.assign(p, { listener, enrollUrl: `https://127.0.0.1:${listener.port}`, appSeen, fingerprint: '' })
  Object.defineProperty(out, 'fingerprint', { get: () => listener.fingerprint })
  return out
}

/** A port nothing listens on right now. */
export async function freePort(): Promise<number> {
  const s = createServer()
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()))
  const port = (s.address() as { port: number }).port
  await new Promise<void>((r) => s.close(() => r()))
  return port
}
