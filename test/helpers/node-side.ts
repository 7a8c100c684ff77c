// Helpers for the node side: a Platform with its enrollment listener on
// 127.0.0.1, a spy on what reaches the application, and free ports.
import { readFileSync } from 'node:fs'
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

export { freePort } from '../../src/addresses.ts'

/** The listener's certificate chain and key as files hold them, and the Platform CA: to stand up a server the node trusts. */
export function listenerTls(dataDir: string): { cert: string; key: string; ca: string } {
  const read = (f: string) => readFileSync(`${dataDir}/platform/${f}`, 'utf8')
  const ca = read('ca/cert.pem')
  return { cert: read('tls/cert.pem') + ca, key: read('tls/key.pem'), ca }
}
