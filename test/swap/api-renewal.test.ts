// A renewed API certificate inside one engine (src/http/api-server.ts): the
// new server binds beside the old one (SO_REUSEPORT), new connections are
// steered to it, and the old one closes only once its accept queue is empty.
// Clients opening a new TLS connection per request all through many renewals
// must see no refused or reset connection, and afterwards the last
// certificate. (Stopping the old server first, then binding, refuses some.)
import { describe, expect, test } from 'bun:test'
import { probeChain } from '../../src/crypto/pin.ts'
import { certFingerprint } from '../../src/crypto/x509.ts'
import { ApiServer } from '../../src/http/api-server.ts'
import { newCert } from '../helpers/certs.ts'
import { waitFor } from '../helpers/tmp.ts'

describe('API certificate renewal', () => {
  test('many renewals under a stream of new connections: none refused or reset; new connections get the last certificate', { timeout: 90_000 }, async () => {
    const certs = await Promise.all(['a', 'b'].map((n) => newCert(n)))
    const api = new ApiServer({ host: '127.0.0.1', port: 0, fetch: () => new Response('ok') })
    await api.listen({ cert: certs[0]!.certPem, key: certs[0]!.keyPem })
    const port = api.port
    let stopped = false
    let ok = 0
    const failures: string[] = []
    const loop = async () => {
      while (!stopped) {
        try {
          const r = await fetch(`https://127.0.0.1:${port}/healthz`, { headers: { connection: 'close' }, tls: { rejectUnauthorized: false } })
          if ((await r.text()) === 'ok') ok++
          else failures.push(`status ${r.status}`)
        } catch (e) {
          failures.push((e as Error).message)
        }
      }
    }
    const loops = Array.from({ length: 6 }, loop)
    try {
      await waitFor(() => ok > 50, { what: 'traffic' })
      for (let i = 1; i <= 30; i++) {
        const next = certs[i % 2]!
        await api.swap({ cert: next.certPem, key: next.keyPem })
        const seen = ok
        await waitFor(() => ok > seen + 10, { what: `traffic after renewal ${i}` })
      }
    } finally {
      stopped = true
      await Promise.all(loops)
    }
    expect(failures).toEqual([])
    expect(certFingerprint((await probeChain('127.0.0.1', port))[0]!)).toBe(certFingerprint(certs[0]!.certPem))
    await api.stop()
  })
})
