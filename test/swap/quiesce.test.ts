// The old engine's half of a swap, in process with real servers: quiesce holds
// new requests, answers long polls, stops the services and writes the last
// heartbeats to the store; a second Platform on the same data directory then
// sees them, and the held requests are forwarded to it over its handover socket.
import { describe, expect, test } from 'bun:test'
import { DataDir } from '../../src/datadir.ts'
import { Platform } from '../../src/platform/platform.ts'
import { openExistingStore } from '../../src/store/open.ts'
import { handOver, quiesce, startHandoverServer } from '../../src/swap/engine.ts'
import { VERSION } from '../../src/version.ts'
import { enrollRaw, newCert } from '../helpers/certs.ts'
import { onEngine, startPlatform } from '../helpers/platform.ts'
import { ENGINES, freshDatabase } from '../helpers/postgres.ts'
import { tmpDir } from '../helpers/tmp.ts'

// On PostgreSQL too: the two engines share one store, and the next one opens it only after the old one closed it.
describe.each(ENGINES)('engine swap: quiesce and hand over, on %s', (engine) => {
  onEngine(engine)
  test('new requests wait, long polls answer, heartbeats reach the store; the next engine answers what waited', { timeout: 90_000 }, async () => {
    const linger = process.env.MUSTER_SWAP_LINGER_SECONDS
    process.env.MUSTER_SWAP_LINGER_SECONDS = '0' // the test's own keep-alive connections need no grace
    using dir = tmpDir()
    const pg = engine === 'postgres' ? await freshDatabase() : undefined
    const old = await startPlatform({ dataDir: dir.path, remoteDispatch: true, localNode: false, database: pg?.url })
    let next: Platform | undefined
    try {
      const { token } = await old.client.nodes.createEnrollment({ nodeId: 'w1' })
      const { credential } = (await (await enrollRaw(old.url, { token, nodeId: 'w1', certPem: (await newCert()).certPem, version: VERSION })).json()) as { credential: string }
      const node = { authorization: `Bearer ${credential}`, 'content-type': 'application/json' }
      const poll = fetch(`${old.url}/api/v1/nodes/self/assignments?after=0&wait=50`, { headers: node })
      const beat = await fetch(`${old.url}/api/v1/nodes/register`, { method: 'POST', headers: node, body: JSON.stringify({ version: VERSION }) })
      expect(beat.status).toBe(200)
      const seen = old.platform.fabric.registry.get('w1')!.lastSeenAt

      // 1. quiesce: the long poll answers at once; the heartbeat is in the store; a new request waits
      const quiescing = Date.now()
      const quiesced = quiesce(old.platform)
      // At once, not at quiesce's 30 s cap for requests still running (nor at the poll's own wait).
      expect(await Promise.race([poll.then((r) => r.status), Bun.sleep(10_000).then(() => 'still waiting after 10 s')])).toBe(200)
      expect(Date.now() - quiescing).toBeLessThan(10_000)
      await quiesced
      const store = await openExistingStore(new DataDir(dir.path))
      expect(Number((await store.get<{ last_seen_at: number }>("SELECT last_seen_at FROM node_heartbeats WHERE name = 'w1'"))?.last_seen_at)).toBe(seen!)
      await store.close()
      // The old engine's store is closed: nothing it still runs can write beside the next engine.
      await expect(old.platform.store.get('SELECT 1 AS one')).rejects.toThrow()
      let answered = false
      const waiting = fetch(`${old.url}/api/v1/nodes`, { headers: { authorization: `Bearer ${old.token}` } }).then((r) => ((answered = true), r))
      await Bun.sleep(300) // (a negative: it must still be waiting)
      expect(answered).toBe(false)

      // 2. the next engine opens the same store and serves; the waiting request is forwarded to it
      next = await Platform.open({ dataDir: dir.path, port: 0, lock: false, remoteDispatch: true, localNode: false })
      await next.listen()
      const handover = startHandoverServer(next)
      const released = handOver(old.platform, handover.path)
      const r = await waiting
      expect(r.status).toBe(200)
      expect(r.headers.get('connection')).toBe('close')
      const w1 = ((await r.json()) as { nodes: { name: string; lastSeenAt: string | null }[] }).nodes.find((n) => n.name === 'w1')
      expect(w1?.lastSeenAt).toBe(new Date(seen!).toISOString())
      // A request that reaches the old engine now (a connection it still holds) is forwarded too.
      const late = await old.platform.handle(new Request(`${old.url}/api/v1/nodes`, { headers: { authorization: `Bearer ${old.token}` } }))
      expect(late.status).toBe(200)
      expect(late.headers.get('connection')).toBe('close')
      await released
      handover.stop()
    } finally {
      await old.close()
      await next?.close()
      await pg?.drop()
      if (linger === undefined) delete process.env.MUSTER_SWAP_LINGER_SECONDS
      else process.env.MUSTER_SWAP_LINGER_SECONDS = linger
    }
  })
})
