// Helpers for the node side: a Platform with its enrollment listener on
// 127.0.0.1, a spy on what reaches the application, and free ports.
import type { PlatformOptions } from '../../src/platform/platform.ts'
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
    // Only the listener's forwards: the API port's requests may carry any URL (the fuzz test sends some).
    if (req.url.startsWith('http://enrollment-listener/')) appSeen.push(`${req.method} ${new URL(req.url).pathname}`)
    return original(req)
  }
  const out = Object.assign(p, { listener, enrollUrl: `https://127.0.0.1:${listener.port}`, appSeen, fingerprint: '' })
  Object.defineProperty(out, 'fingerprint', { get: () => listener.fingerprint })
  return out
}

import type { Vault } from '../../src/context/vault.ts'

export { freePort } from '../../src/addresses.ts'

/** The listener's certificate chain and key as the Platform serves them (kept in its vault), and the Platform CA: to stand up a server the node trusts. */
export async function listenerTls(p: { platform: { vault: Vault; listener?: { certificate: { certPem: string; keyPem: string } } } }): Promise<{ cert: string; key: string; ca: string }> {
  const ca = await p.platform.vault.get('ca/cert.pem')
  const served = p.platform.listener?.certificate
  if (ca === null || !served) throw new Error('the Platform has no CA or no listener certificate')
  return { cert: served.certPem + ca, key: served.keyPem, ca }
}
