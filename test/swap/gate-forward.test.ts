// What the old engine forwards to the new one during a swap, with a
// real old Platform quiesced and handed over to a stand-in for the new engine
// on its handover socket that records what it receives: the client's address
// is the one the old engine saw (a client cannot name its own in the header
// the new engine honours), and a long poll arrives without its wait.
import { describe, expect, test } from 'bun:test'
import { join } from 'node:path'
import { handOver, quiesce } from '../../src/swap/engine.ts'
import { PEER_HEADER } from '../../src/swap/gate.ts'
import { startPlatform } from '../helpers/platform.ts'
import { tmpDir, waitFor } from '../helpers/tmp.ts'

describe('engine swap forwarding', () => {
  test("the new engine gets the client's real address, never one the client sent, and long polls without their wait", { timeout: 60_000 }, async () => {
    const linger = process.env.MUSTER_SWAP_LINGER_SECONDS
    process.env.MUSTER_SWAP_LINGER_SECONDS = '0'
    using dir = tmpDir()
    const old = await startPlatform({ remoteDispatch: true, localNode: false })
    const seen: { path: string; search: string; peer: string | null; auth: string | null }[] = []
    const socket = join(dir.path, 'next.sock')
    const next = Bun.serve({
      unix: socket,
      fetch(req) {
        const u = new URL(req.url)
        seen.push({ path: u.pathname, search: u.search, peer: req.headers.get(PEER_HEADER), auth: req.headers.get('authorization') })
        return Response.json({ ok: true })
      },
    })
    try {
      await quiesce(old.platform)
      const spoofed = { [PEER_HEADER]: '203.0.113.7', authorization: `Bearer ${old.token}` }
      const held = [
        fetch(`${old.url}/api/v1/nodes`, { headers: spoofed }),
        fetch(`${old.url}/api/v1/nodes/self/assignments?after=3&wait=50`, { headers: spoofed }),
        fetch(`${old.url}/api/v1/nodes/self/assignments?wait=50&after=4`, { headers: { authorization: 'Bearer x' } }),
      ]
      // (they wait while the old engine is held; then the new engine answers them)
      const released = handOver(old.platform, socket)
      const answers = await Promise.all(held)
      expect(answers.map((r) => r.status)).toEqual([200, 200, 200])
      await waitFor(() => seen.length === 3, { what: 'three forwarded requests' })
      const byPath = seen.sort((a, b) => a.search.localeCompare(b.search))
      expect(byPath).toEqual([
        { path: '/api/v1/nodes', search: '', peer: '127.0.0.1', auth: `Bearer ${old.token}` },
        { path: '/api/v1/nodes/self/assignments', search: '?after=3', peer: '127.0.0.1', auth: `Bearer ${old.token}` },
        { path: '/api/v1/nodes/self/assignments', search: '?after=4', peer: '127.0.0.1', auth: 'Bearer x' },
      ])
      await released
    } finally {
      void next.stop(true)
      await old.close()
      if (linger === undefined) delete process.env.MUSTER_SWAP_LINGER_SECONDS
      else process.env.MUSTER_SWAP_LINGER_SECONDS = linger
    }
  })
})
