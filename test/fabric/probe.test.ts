// docs/security.md: the readiness probe is no port scanner. A node that points its
// URL at another local port learns nothing from the node list (one generic
// reason for every failure), and a URL whose host its certificate does not
// name is never dialled at all.
import { afterEach, describe, expect, test } from 'bun:test'
import { createServer, type Server } from 'node:net'
import { Agent } from '../../src/agent/agent.ts'
import { joinPlatform } from '../../src/agent/join.ts'
import { clearPinCache } from '../../src/crypto/pin.ts'
import { generateKeyAndCert } from '../../src/crypto/x509.ts'
import { ADDRESS_NOT_NAMED, PROBE_FAILED } from '../../src/fabric/probe.ts'
import { VERSION } from '../../src/version.ts'
import { freePort, startListenerPlatform, type ListenerPlatform } from '../helpers/node-side.ts'
import { tmpDir } from '../helpers/tmp.ts'
import { withProof } from '../helpers/certs.ts'

afterEach(() => clearPinCache())

/** A service on this machine the attacker would like to find: counts who connects. */
async function countingService(banner: string): Promise<{ server: Server; port: number; connections: () => number }> {
  let n = 0
  const server = createServer((s) => {
    n++
    s.end(banner)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return { server, port: (server.address() as { port: number }).port, connections: () => n }
}

/** What `muster nodes list` shows for a node (a heartbeat marks it alive, so the probe's reason is what shows). */
async function shownReason(p: ListenerPlatform, name: string): Promise<string | null | undefined> {
  const entry = p.platform.fabric.registry.get(name)!
  p.platform.fabric.registry.heartbeat(entry, {})
  await p.platform.prober.probe(name)
  return (await p.client.nodes.list()).nodes.find((n) => n.name === name)?.reason
}

describe('readiness probe', () => {
  test('pointed at other local ports, every failure reads the same: open, closed, or TLS with another certificate', async () => {
    await using p = await startListenerPlatform({ probeIntervalMs: 3_600_000 })
    using dir = tmpDir()
    const ssh = await countingService('SSH-2.0-OpenSSH_9.6\r\n')
    const other = await generateKeyAndCert({ commonName: 'other', dnsNames: [], ipAddresses: ['127.0.0.1'], days: 1 })
    const tlsService = Bun.serve({ hostname: '127.0.0.1', port: 0, tls: { cert: other.certPem, key: other.keyPem }, fetch: () => new Response('hi') })
    const closed = await freePort()
    try {
      const reasons: Record<string, unknown> = {}
      for (const [name, port] of [['open-port', ssh.port], ['closed-port', closed], ['tls-port', tlsService.port!]] as const) {
        // The honest join tool, told the node listens on the other port: its certificate names 127.0.0.1.
        const { token } = await p.client.nodes.createEnrollment({ nodeId: name })
        await joinPlatform({ dataDir: `${dir.path}/${name}`, platformUrl: p.enrollUrl, nodeId: name, fingerprint: p.fingerprint, addresses: ['127.0.0.1'], port, readToken: async () => token })
        reasons[name] = await shownReason(p, name)
      }
      expect(ssh.connections()).toBeGreaterThan(0) // 127.0.0.1 is named, so it was dialled…
      expect(reasons).toEqual({ 'open-port': PROBE_FAILED, 'closed-port': PROBE_FAILED, 'tls-port': PROBE_FAILED }) // …and nothing tells the ports apart
    } finally {
      ssh.server.close()
      tlsService.stop(true)
    }
  })

  test('a URL whose host the certificate does not name is never dialled', async () => {
    await using p = await startListenerPlatform({ probeIntervalMs: 3_600_000 })
    const target = await countingService('internal service\r\n')
    try {
      // A node's own certificate names elsewhere.example; its URL points at a service on the Platform's machine.
      const cert = await generateKeyAndCert({ commonName: 'sneaky', dnsNames: ['elsewhere.example'], ipAddresses: ['192.0.2.7'], days: 30 })
      const { token } = await p.client.nodes.createEnrollment({ nodeId: 'sneaky' })
      const res = await fetch(`${p.enrollUrl}/api/v1/nodes/enroll`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(withProof({ token, nodeId: 'sneaky', certPem: cert.certPem, url: `https://127.0.0.1:${target.port}`, version: VERSION }, cert.keyPem)),
        tls: { rejectUnauthorized: false },
      })
      expect(res.status).toBe(200)
      expect(await shownReason(p, 'sneaky')).toBe(ADDRESS_NOT_NAMED)
      await p.platform.prober.probeAll()
      expect(target.connections()).toBe(0)
    } finally {
      target.server.close()
    }
  })

  test('a node heartbeating but not yet probed is enrolled (health probe pending), never unreachable; one never heartbeating is not probed', async () => {
    await using p = await startListenerPlatform({ probeIntervalMs: 3_600_000 })
    using dir = tmpDir()
    const { token } = await p.client.nodes.createEnrollment({ nodeId: 'fresh' })
    await joinPlatform({ dataDir: `${dir.path}/fresh`, platformUrl: p.enrollUrl, nodeId: 'fresh', fingerprint: p.fingerprint, addresses: ['127.0.0.1'], port: await freePort(), readToken: async () => token })
    const registry = p.platform.fabric.registry
    // Its Agent has not started: the probe loop leaves it alone (a probe now would only fail).
    await p.platform.prober.probeDue()
    expect(registry.get('fresh')!.probe).toBeUndefined()
    expect(registry.state(registry.get('fresh')!)).toEqual({ state: 'enrolled', reason: 'no heartbeat yet' })
    // The first heartbeat, before its probe has answered.
    const seen = { ...registry.get('fresh')!.fields(), lastSeenAt: Date.now(), probe: undefined }
    expect(registry.state(seen)).toEqual({ state: 'enrolled', reason: 'health probe pending' })
  })

  test('a rebound name on a new machine is not ready on the old machine\'s last heartbeat and probe', async () => {
    await using p = await startListenerPlatform({ probeIntervalMs: 3_600_000 })
    using dir = tmpDir()
    const port = await freePort()
    const { token } = await p.client.nodes.createEnrollment({ nodeId: 'w1' })
    await joinPlatform({ dataDir: `${dir.path}/old`, platformUrl: p.enrollUrl, nodeId: 'w1', fingerprint: p.fingerprint, addresses: ['127.0.0.1'], port, readToken: async () => token })
    const old = new Agent({ dataDir: `${dir.path}/old`, host: '127.0.0.1', heartbeatMs: 60_000 })
    await old.start()
    try {
      await p.platform.prober.probe('w1')
      const registry = p.platform.fabric.registry
      expect(registry.state(registry.get('w1')!).state).toBe('ready')
    } finally {
      await old.stop()
    }
    // The name moves to a new machine: rebind, and a join there with a new key and certificate.
    const rebound = await p.client.nodes.rebind('w1')
    await joinPlatform({ dataDir: `${dir.path}/new`, platformUrl: p.enrollUrl, nodeId: 'w1', fingerprint: p.fingerprint, addresses: ['127.0.0.1'], port, readToken: async () => rebound.token })
    // Nothing of the new machine has been seen yet: neither a heartbeat nor a probe answered with its certificate.
    const shown = (await p.client.nodes.list()).nodes.find((n) => n.name === 'w1')!
    expect({ state: shown.state, lastSeenAt: shown.lastSeenAt }).toEqual({ state: 'enrolled', lastSeenAt: null })
  })
})

