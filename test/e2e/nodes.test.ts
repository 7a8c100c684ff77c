// The enrollment authority through the compiled binary, including kill -9.
import { describe, expect, test } from 'bun:test'
import { chmodSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { runMuster, startServe } from '../helpers/binary.ts'
import { newCert } from '../helpers/certs.ts'
import { tmpDir, waitFor } from '../helpers/tmp.ts'

describe('nodes through dist/muster', () => {
  test('enroll-token, join-token, enroll by hand, list, audit; all of it survives kill -9', { timeout: 60_000 }, async () => {
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
      writeFileSync(`${dir.path}/token`, `${enrollment.token}\n`, { mode: 0o644 })
      const loose = await runMuster(['nodes', 'enroll', 'w1', '--enrollment-token-file', `${dir.path}/token`, '--cert-file', `${dir.path}/cert.pem`, '--agent-url', 'https://127.0.0.1:7381'], { env })
      expect(loose.code).toBe(1) // a secret file others can read is refused, with the fix
      expect(loose.stderr).toContain(`chmod 600 ${dir.path}/token`)
      chmodSync(`${dir.path}/token`, 0o600)
      const enrolled = await runMuster(
        ['nodes', 'enroll', 'w1', '--enrollment-token-file', `${dir.path}/token`, '--cert-file', `${dir.path}/cert.pem`, '--agent-url', 'https://127.0.0.1:7381', '--trust-out', `${dir.path}/trust.json`, '--credential-out', `${dir.path}/cred`],
        { env },
      )
      expect(enrolled.code).toBe(0)
      expect(statSync(`${dir.path}/trust.json`).mode & 0o777).toBe(0o600)
      const credential = readFileSync(`${dir.path}/cred`, 'utf8').trim()
      expect(credential).toMatch(/^mnc_w1\.1\./)

      const bad = await runMuster(['nodes', 'enroll', 'rack-1', '--enrollment-token', 'mjt_aaaaaaaaaaaaaaaa.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA', '--cert-file', `${dir.path}/cert.pem`, '--agent-url', 'https://127.0.0.1:7381'], { env })
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

      // Let a heartbeat batch reach the disk, then crash the Platform.
      await Bun.sleep(1500)
      serve.proc.kill('SIGKILL')
      await serve.proc.exited
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
      const enrolled2 = await runMuster(['nodes', 'enroll', 'w2', '--cert-file', `${dir.path}/cert2.pem`, '--agent-url', 'https://127.0.0.1:7382', '--json'], { env: { ...env2, MUSTER_ENROLLMENT_TOKEN: w2.token } })
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
    writeFileSync(`${dir.path}/cert.pem`, (await newCert('b1')).certPem)
    const enroll = (token: string) => runMuster(['nodes', 'enroll', 'b1', '--cert-file', `${dir.path}/cert.pem`, '--agent-url', 'https://127.0.0.1:7381', '--label', 'role=general', '--json'], { env: { ...env, MUSTER_ENROLLMENT_TOKEN: token } })
    const byFleet = await enroll(fleet.token)
    expect(byFleet.code).toBe(1)
    expect(byFleet.stderr).toContain('Enrollment refused.')
    const own = JSON.parse((await runMuster(['nodes', 'enroll-token', 'b1', '--json'], { env })).stdout) as { token: string }
    expect((await enroll(own.token)).code).toBe(0)
    const list = JSON.parse((await runMuster(['nodes', 'list', '--json'], { env })).stdout) as { nodes: { name: string; labels: Record<string, string>; declared: boolean }[] }
    expect(list.nodes).toMatchObject([{ name: 'b1', labels: { role: 'build' }, declared: true }])
  })
})
