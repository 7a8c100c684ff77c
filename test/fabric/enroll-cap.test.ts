// The enroll in-flight cap (docs/nodes.md) is real: enroll waits on the store
// asynchronously, so 256 attempts are genuinely in flight at once while the
// store is held (a long transaction, as a slow disk or a busy PostgreSQL would
// hold it), and the 257th is answered 429 at once. Raw HTTP/1.1 over TCP: the
// runtime's fetch would queue the 257th request on its own side.
import { describe, expect, test } from 'bun:test'
import { VERSION } from '../../src/version.ts'
import type { Store } from '../../src/store/db.ts'
import { newCert, withProof } from '../helpers/certs.ts'
import { clockFor } from '../helpers/clocks.ts'
import { onEngine, startPlatform } from '../helpers/platform.ts'
import { ENGINES } from '../helpers/postgres.ts'
import { waitFor } from '../helpers/tmp.ts'

/** POST over a raw socket; resolves with the status code of the answer. */
function rawPost(port: number, path: string, body: string): Promise<number> {
  return new Promise((resolve, reject) => {
    let seen = ''
    void Bun.connect({
      hostname: '127.0.0.1',
      port,
      socket: {
        open(s) {
          s.write(`POST ${path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`)
        },
        data(s, chunk) {
          seen += chunk.toString()
          const m = /^HTTP\/1\.1 (\d{3})/.exec(seen)
          if (m) {
            resolve(Number(m[1]))
            s.end()
          }
        },
        close() {
          if (!/^HTTP\/1\.1 \d{3}/.test(seen)) reject(new Error('closed without an answer'))
        },
        error(_s, e) {
          reject(e)
        },
      },
    }).catch(reject)
  })
}

/** Holds the store until `gate` settles: SQLite's one connection, or PostgreSQL's join_tokens table. */
function holdStore(store: Store, gate: Promise<void>): { held: Promise<void>; done: Promise<void> } {
  let held!: () => void
  const heldP = new Promise<void>((r) => (held = r))
  const done = store.tx(async (t) => {
    if (t.engine === 'postgres') await t.run('LOCK TABLE join_tokens IN ACCESS EXCLUSIVE MODE')
    held()
    await gate
  })
  return { held: heldP, done }
}

describe.each(ENGINES)('on %s', (engine) => {
  onEngine(engine)

  test('256 enrolls in flight on a held store; the 257th concurrent attempt is 429 at once; then all 256 enroll', { timeout: 120_000 }, async () => {
    await using p = await startPlatform({ remoteDispatch: true })
    const fleet = await p.client.nodes.createJoinToken({ maxUses: 300 })
    const port = Number(new URL(p.url).port)
    const bodies = await Promise.all(
      Array.from({ length: 258 }, async (_, i) => {
        const cert = await newCert(`n${i}`)
        return JSON.stringify(withProof({ token: fleet.token, nodeId: `n${i}`, certPem: cert.certPem, version: VERSION }, cert.keyPem, clockFor(p.url)))
      }),
    )
    const limiter = p.platform.fabric.limits.enroll
    let open!: () => void
    const hold = holdStore(p.platform.ctx.store, new Promise<void>((r) => (open = r)))
    await hold.held
    const first = bodies.slice(0, 256).map((b) => rawPost(port, '/api/v1/nodes/enroll', b))
    await waitFor(() => limiter.active === 256, { timeoutMs: 30_000, what: '256 enrolls in flight' })
    let extra: number | undefined
    void rawPost(port, '/api/v1/nodes/enroll', bodies[256]!).then((s) => (extra = s))
    // Either it is answered, or (were the cap not enforced) it joins the others in flight.
    await waitFor(() => extra !== undefined || limiter.active > 256, { timeoutMs: 30_000, what: 'the 257th answered or admitted' })
    expect(limiter.active).toBe(256)
    expect(extra).toBe(429)
    open()
    await hold.done
    expect(await Promise.all(first)).toEqual(Array(256).fill(200))
    expect(limiter.active).toBe(0)
    // the cap, not the token bucket, refused it: one more enrolls now
    expect(await rawPost(port, '/api/v1/nodes/enroll', bodies[257]!)).toBe(200)
    expect((await p.client.nodes.list()).nodes).toHaveLength(257)
  })
})
