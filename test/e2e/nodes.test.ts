// The enrollment authority through the compiled binary, including kill -9.
import { describe, expect, test } from 'bun:test'
import { Database } from 'bun:sqlite'
import { chmodSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { killServeHard, runMuster, startServe } from '../helpers/binary.ts'
import { newCert, withProof } from '../helpers/certs.ts'
import { tmpDir, waitFor } from '../helpers/tmp.ts'

/** last_seen_at of a node as written in the data directory's database (its heartbeat row; read beside the running Platform). */
function lastSeenOnDisk(data: string, name: string): number | null {
  const db = new Database(`${data}/muster.db`, { readonly: true })
  try {
    return (db.query('SELECT last_seen_at FROM node_heartbeats WHERE name = ?').get(name) as { last_seen_at: number | null } | null)?.last_seen_at ?? null
  } finally {
    db.close()
  }
}

const api = (url: string, token: string, method: string, path: string, body?: unknown) =>
  fetch(`${url}${path}`, { method, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) })

describe('nodes through dist/muster', () => {
  test('enroll-token, join-token, enroll by hand, list, audit; all of it survives kill -9', { timeout: 180_000 }, async () => {
    using dir = tmpDir()
    const data = `${dir.path}/data`
    let serve = await startServe(data, ['--remote-dispatch'])
    try {
      const minted = JSON.parse((await runMuster(['admin', 'api-token', '--data-dir', data, '--json'])).stdout) as { token: string }
      const env = { MUSTER_URL: serve.url, MUSTER_TOKEN: minted.token }

      const et = await runMuster(['nodes', 'enroll-token', 'w1', '--json'], { env })
      expect(et.code).toBe(0)
      const enrollment = JSON.parse(et.stdout) as { nodeId: string; token: string; expiresAt: string }
      expect(enrollment.nodeId).toBe('w1')
      expect(enrollment.token).toMatch(/^mjt_/)

      const jt = await runMuster(['nodes', 'join-token', 'create', '--max-uses', '3', '--name-pattern', 'rack-*', '--label', 'rack', '--json'], { env })
      expect(jt.code).toBe(0)
      const fleet = JSON.parse(jt.stdout) as { id: string; token: string; maxUses: number; namePattern: string; expiresAt: string }
      expect(fleet).toMatchObject({ maxUses: 3, namePattern: 'rack-*' })

      const cert = await newCert('w1')
      writeFileSync(`${dir.path}/cert.pem`, cert.certPem)
      writeFileSync(`${dir.path}/key.pem`, cert.keyPem, { mode: 0o600 })
      writeFileSync(`${dir.path}/token`, `${enrollment.token}\n`, { mode: 0o644 })
      const loose = await runMuster(['nodes', 'enroll', 'w1', '--enrollment-token-file', `${dir.path}/token`, '--cert-file', `${dir.path}/cert.pem`, '--key-file', `${dir.path}/key.pem`, '--agent-url', 'https://127.0.0.1:7381'], { env })
      expect(loose.code).toBe(1) // a secret file others can read is refused, with the fix
      expect(loose.stderr).toContain(`chmod 600 ${dir.path}/token`)
      chmodSync(`${dir.path}/token`, 0o600)
      const enrolled = await runMuster(
        ['nodes', 'enroll', 'w1', '--enrollment-token-file', `${dir.path}/token`, '--cert-file', `${dir.path}/cert.pem`, '--key-file', `${dir.path}/key.pem`, '--agent-url', 'https://127.0.0.1:7381', '--trust-out', `${dir.path}/trust.json`, '--credential-out', `${dir.path}/cred`],
        { env },
      )
      expect(enrolled.code).toBe(0)
      expect(statSync(`${dir.path}/trust.json`).mode & 0o777).toBe(0o600)
      const credential = readFileSync(`${dir.path}/cred`, 'utf8').trim()
      expect(credential).toMatch(/^mnc_w1\.1\./)

      const bad = await runMuster(['nodes', 'enroll', 'rack-1', '--enrollment-token', 'mjt_aaaaaaaaaaaaaaaa.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA', '--cert-file', `${dir.path}/cert.pem`, '--key-file', `${dir.path}/key.pem`, '--agent-url', 'https://127.0.0.1:7381'], { env })
      expect(bad.code).toBe(1)
      expect(bad.stderr).toContain('Enrollment refused.')
      expect(bad.stderr).toContain('shell history') // the secret-on-argv warning

      const hb = await fetch(`${serve.url}/api/v1/nodes/register`, { method: 'POST', headers: { authorization: `Bearer ${credential}`, 'content-type': 'application/json' }, body: '{"version":"0.1.0"}' })
      expect(hb.status).toBe(200)

      const list = JSON.parse((await runMuster(['nodes', 'list', '--json'], { env })).stdout) as { nodes: { name: string; state: string }[]; pendingEnrollments: unknown[] }
      expect(list.nodes.map((n) => n.name)).toEqual(['w1']) // no local node unless serve --local-node
      const table = await runMuster(['nodes', 'list'], { env })
      expect(table.stdout).toMatch(/^NAME\s+STATE/m)

      const audit = JSON.parse((await runMuster(['nodes', 'audit', '--json'], { env })).stdout) as { entries: { outcome: string; reason: string | null }[] }
      expect(audit.entries.map((e) => e.outcome)).toEqual(['refused', 'enrolled'])

      // Once the heartbeat batch reached the disk, crash the Platform.
      await waitFor(() => lastSeenOnDisk(data, 'w1'), { what: "w1's heartbeat flushed to muster.db" })
      await killServeHard(serve)
      serve = await startServe(data, ['--remote-dispatch'])
      const env2 = { MUSTER_URL: serve.url, MUSTER_TOKEN: minted.token }
      const after = JSON.parse((await runMuster(['nodes', 'list', '--json'], { env: env2 })).stdout) as { nodes: { name: string; lastSeenAt: string | null }[] }
      expect(after.nodes.find((n) => n.name === 'w1')?.lastSeenAt).not.toBeNull()
      const tokens = JSON.parse((await runMuster(['nodes', 'join-token', 'list', '--json'], { env: env2 })).stdout) as { tokens: { id: string; uses: number }[] }
      expect(tokens.tokens.map((t) => t.id)).toEqual([fleet.id])
      expect((await fetch(`${serve.url}/api/v1/nodes/register`, { method: 'POST', headers: { authorization: `Bearer ${credential}` } })).status).toBe(200)
      const audit2 = JSON.parse((await runMuster(['nodes', 'audit', '--json'], { env: env2 })).stdout) as { entries: unknown[] }
      expect(audit2.entries).toHaveLength(2)

      // Operator verbs.
      const rotated = await runMuster(['nodes', 'rotate', 'w1', '--json'], { env: env2 })
      expect(JSON.parse(rotated.stdout)).toMatchObject({ nodeId: 'w1', generation: 2 })
      expect((await fetch(`${serve.url}/api/v1/nodes/register`, { method: 'POST', headers: { authorization: `Bearer ${credential}` } })).status).toBe(200) // the grace hour
      expect((await runMuster(['nodes', 'drain', 'w1'], { env: env2 })).code).toBe(0)
      // healthy (it heartbeats): remove refuses and says what to do instead
      const healthy = await runMuster(['nodes', 'remove', 'w1'], { env: env2 })
      expect(healthy.code).toBe(1)
      expect(healthy.stderr).toContain('is healthy')
      expect(healthy.stderr).toContain('muster nodes revoke w1')
      expect(healthy.stderr).toContain('muster nodes drain w1')
      expect(healthy.stderr).toContain('--force')
      expect((await runMuster(['nodes', 'revoke', 'w1', '--json'], { env: env2 })).code).toBe(0)
      await waitFor(async () => (await fetch(`${serve.url}/api/v1/nodes/register`, { method: 'POST', headers: { authorization: `Bearer ${credential}` } })).status === 403)
      const rebound = await runMuster(['nodes', 'rebind', 'w1'], { env: env2 })
      expect(rebound.code).toBe(0)
      expect(rebound.stdout.trim()).toMatch(/^mjt_[a-z2-7]{16}\.[A-Za-z0-9_-]{43}$/) // the new enrollment, shown once
      expect((await fetch(`${serve.url}/api/v1/nodes/register`, { method: 'POST', headers: { authorization: `Bearer ${credential}` } })).status).toBe(401)
      const rm = await runMuster(['nodes', 'remove', 'w1'], { env: env2 })
      expect(rm.code).toBe(0)
      const rmLocal = await runMuster(['nodes', 'remove', 'local'], { env: env2 })
      expect(rmLocal.code).toBe(1)
      // --force removes a healthy node
      const w2 = JSON.parse((await runMuster(['nodes', 'enroll-token', 'w2', '--json'], { env: env2 })).stdout) as { token: string }
      const cert2 = await newCert('w2')
      writeFileSync(`${dir.path}/cert2.pem`, cert2.certPem)
      writeFileSync(`${dir.path}/key2.pem`, cert2.keyPem, { mode: 0o600 })
      const enrolled2 = await runMuster(['nodes', 'enroll', 'w2', '--cert-file', `${dir.path}/cert2.pem`, '--key-file', `${dir.path}/key2.pem`, '--agent-url', 'https://127.0.0.1:7382', '--json'], { env: { ...env2, MUSTER_ENROLLMENT_TOKEN: w2.token } })
      expect(enrolled2.code).toBe(0)
      const credential2 = (JSON.parse(enrolled2.stdout) as { credential: string }).credential
      expect((await fetch(`${serve.url}/api/v1/nodes/register`, { method: 'POST', headers: { authorization: `Bearer ${credential2}` } })).status).toBe(200)
      expect((await runMuster(['nodes', 'remove', 'w2'], { env: env2 })).code).toBe(1)
      expect((await runMuster(['nodes', 'remove', 'w2', '--force'], { env: env2 })).code).toBe(0)
      expect((await fetch(`${serve.url}/api/v1/nodes/register`, { method: 'POST', headers: { authorization: `Bearer ${credential2}` } })).status).toBe(401)
      const revoke = await runMuster(['nodes', 'join-token', 'revoke', fleet.id], { env: env2 })
      expect(revoke.code).toBe(0)
    } finally {
      await serve.stop()
    }
  })

  test('kill -9 in the middle of writes: everything acknowledged is there after the restart, and nothing half-written', { timeout: 180_000 }, async () => {
    using dir = tmpDir()
    const data = `${dir.path}/data`
    await using serve = await startServe(data, ['--remote-dispatch'])
    const { token } = JSON.parse((await runMuster(['admin', 'api-token', '--data-dir', data, '--json'])).stdout) as { token: string }
    const fleet = (await (await api(serve.url, token, 'POST', '/api/v1/join-tokens', { maxUses: 1000, namePattern: 'f-*' })).json()) as { id: string; token: string }
    const certs = await Promise.all(Array.from({ length: 400 }, (_, i) => newCert(`f-${i}`)))
    // Four writers: operator writes (enrollments, join tokens) and node enrollments, each
    // counted as acknowledged only when its 200 arrived. They stop at the first failure.
    const acked = { enrollments: [] as string[], joinTokens: [] as string[], nodes: [] as string[] }
    let next = 0
    const writer = async (kind: number) => {
      for (;;) {
        const i = next++
        try {
          if (kind === 0) {
            const r = await api(serve.url, token, 'POST', '/api/v1/nodes/enrollments', { nodeId: `e-${i}` })
            if (r.status !== 200) return
            acked.enrollments.push(`e-${i}`)
          } else if (kind === 1) {
            const r = await api(serve.url, token, 'POST', '/api/v1/join-tokens', { maxUses: 1, label: `t-${i}` })
            if (r.status !== 200) return
            acked.joinTokens.push(((await r.json()) as { id: string }).id)
          } else {
            const cert = certs[i % certs.length]!
            const r = await fetch(`${serve.url}/api/v1/nodes/enroll`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(withProof({ token: fleet.token, nodeId: `f-${i}`, certPem: cert.certPem }, cert.keyPem)) })
            if (r.status !== 200) return
            acked.nodes.push(`f-${i}`)
          }
        } catch {
          return
        }
      }
    }
    const writers = [0, 1, 2, 2].map(writer)
    const total = () => acked.enrollments.length + acked.joinTokens.length + acked.nodes.length
    await waitFor(() => total() >= 60 && acked.nodes.length >= 10, { what: 'writes under way', timeoutMs: 30_000 })
    // serve supervises an engine that does the writing: both are killed, the engine first, so nothing stops cleanly.
    await killServeHard(serve)
    await Promise.all(writers)
    expect(next).toBeLessThan(certs.length) // every node got its own certificate

    await using again = await startServe(data, ['--remote-dispatch'])
    const list = (await (await api(again.url, token, 'GET', '/api/v1/nodes')).json()) as { nodes: { name: string; certificateSha256: string | null }[]; pendingEnrollments: { nodeId: string }[] }
    const pending = list.pendingEnrollments.map((e) => e.nodeId)
    for (const name of acked.enrollments) expect(pending).toContain(name)
    const tokens = ((await (await api(again.url, token, 'GET', '/api/v1/join-tokens')).json()) as { tokens: { id: string; uses: number }[] }).tokens
    for (const id of acked.joinTokens) expect(tokens.map((t) => t.id)).toContain(id)
    const enrolled = list.nodes.filter((n) => n.name.startsWith('f-'))
    for (const name of acked.nodes) {
      const cert = certs[Number(name.slice(2)) % certs.length]!
      expect(enrolled.find((n) => n.name === name)?.certificateSha256).toBe(cert.fingerprint.slice(7))
    }
    // Nothing half-written: every node on disk took exactly one use of the token (at most one more
    // than was acknowledged, the answer the kill cut off).
    expect(tokens.find((t) => t.id === fleet.id)?.uses).toBe(enrolled.length)
    expect(enrolled.length - acked.nodes.length).toBeLessThanOrEqual(2)
  })

  test('a Platform without remote dispatch says nodes are disabled', async () => {
    using dir = tmpDir()
    const data = `${dir.path}/data`
    await using serve = await startServe(data)
    const minted = JSON.parse((await runMuster(['admin', 'api-token', '--data-dir', data, '--json'])).stdout) as { token: string }
    const r = await runMuster(['nodes', 'enroll-token', 'w1'], { env: { MUSTER_URL: serve.url, MUSTER_TOKEN: minted.token } })
    expect(r.code).toBe(1)
    expect(r.stderr).toContain('--remote-dispatch')
  })

  test('serve --nodes-file: a bad file refuses the start with its line and reason; a declared name needs its own enrollment', { timeout: 60_000 }, async () => {
    using dir = tmpDir()
    const data = `${dir.path}/data`
    writeFileSync(`${dir.path}/nodes.json`, '{\n  "nodes": [\n    {"name": "b1"},\n    {"name": "b1", "labels": {"role": "build"}}\n  ]\n}\n')
    const bad = await runMuster(['serve', '--data-dir', data, '--port', '0', '--nodes-file', `${dir.path}/nodes.json`])
    expect(bad.code).toBe(1)
    expect(bad.stderr).toContain(`--nodes-file ${dir.path}/nodes.json line 4: nodes[1]: b1 is declared twice (first on line 3)`)
    writeFileSync(`${dir.path}/nodes.json`, JSON.stringify({ nodes: [{ name: 'b1', labels: { role: 'build' } }] }))
    await using serve = await startServe(data, ['--remote-dispatch', '--nodes-file', `${dir.path}/nodes.json`])
    const minted = JSON.parse((await runMuster(['admin', 'api-token', '--data-dir', data, '--json'])).stdout) as { token: string }
    const env = { MUSTER_URL: serve.url, MUSTER_TOKEN: minted.token }
    const fleet = JSON.parse((await runMuster(['nodes', 'join-token', 'create', '--max-uses', '2', '--json'], { env })).stdout) as { token: string }
    const b1 = await newCert('b1')
    writeFileSync(`${dir.path}/cert.pem`, b1.certPem)
    writeFileSync(`${dir.path}/key.pem`, b1.keyPem, { mode: 0o600 })
    const enroll = (token: string) => runMuster(['nodes', 'enroll', 'b1', '--cert-file', `${dir.path}/cert.pem`, '--key-file', `${dir.path}/key.pem`, '--agent-url', 'https://127.0.0.1:7381', '--label', 'role=general', '--json'], { env: { ...env, MUSTER_ENROLLMENT_TOKEN: token } })
    const byFleet = await enroll(fleet.token)
    expect(byFleet.code).toBe(1)
    expect(byFleet.stderr).toContain('Enrollment refused.')
    const own = JSON.parse((await runMuster(['nodes', 'enroll-token', 'b1', '--json'], { env })).stdout) as { token: string }
    expect((await enroll(own.token)).code).toBe(0)
    const list = JSON.parse((await runMuster(['nodes', 'list', '--json'], { env })).stdout) as { nodes: { name: string; labels: Record<string, string>; declared: boolean }[] }
    expect(list.nodes).toMatchObject([{ name: 'b1', labels: { role: 'build' }, declared: true }])
  })
})
