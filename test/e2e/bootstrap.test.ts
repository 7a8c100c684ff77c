// The bootstrap line trusts nothing it has not checked (docs/operations.md): attacks
// through real servers on loopback. An impostor Platform (its own CA) gets the
// line's requests: the CA's SHA-256 does not match, so no script is fetched
// and nothing runs. A Platform whose binary was tampered with: the script stops
// at the binary's SHA-256 and installs nothing. (The whole join across hosts:
// test/e2e/remote-machines.test.ts.)
import { describe, expect, test } from 'bun:test'
import { chmodSync, existsSync, mkdirSync, readFileSync, readdirSync } from 'node:fs'
import { createHash } from 'node:crypto'
import { join, resolve } from 'node:path'
import { generateKeyAndCert } from '../../src/crypto/x509.ts'
import { bootstrapScript, unameArch } from '../../src/bootstrap/script.ts'
import { musterBin, runMuster, startServeWithListener } from '../helpers/binary.ts'
import { describeAsRoot } from '../helpers/root.ts'
import { tmpDir } from '../helpers/tmp.ts'

const sha256 = (b: string | Uint8Array) => createHash('sha256').update(b).digest('hex')

/** An https server on 127.0.0.1 with a self-signed certificate (its own "CA"); records the paths asked for. */
async function impostor(routes: Record<string, () => Response>) {
  const kc = await generateKeyAndCert({ commonName: 'impostor', dnsNames: ['localhost'], ipAddresses: ['127.0.0.1'], days: 2 })
  const seen: string[] = []
  const server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    tls: { cert: kc.certPem, key: kc.keyPem },
    fetch(req) {
      const path = new URL(req.url).pathname
      seen.push(path)
      return routes[path]?.() ?? new Response('no', { status: 404 })
    },
  })
  return { url: `https://127.0.0.1:${server.port}`, caPem: kc.certPem, seen, [Symbol.dispose]: () => void server.stop(true) }
}

const sh = async (line: string, env: Record<string, string> = {}) => {
  const p = Bun.spawn(['sh', '-c', line], { env: { ...process.env, ...env }, stdin: 'ignore', stdout: 'pipe', stderr: 'pipe' })
  const [stdout, stderr, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited])
  return { code, stdout, stderr }
}

describe('the bootstrap line', () => {
  test('an impostor with its own CA: the CA check fails, no script is fetched, nothing runs', { timeout: 90_000 }, async () => {
    using dir = tmpDir()
    await using serve = await startServeWithListener(`${dir.path}/platform`, ['--no-local-node'])
    const e = JSON.parse((await runMuster(['nodes', 'enroll-token', 'w1', '--json'], { env: serve.env })).stdout) as { bootstrapCommand: string }
    const genuine = new URL(serve.enrollUrl).origin
    expect(e.bootstrapCommand).toContain(`curl -fsSk -o "$c" ${genuine}/bootstrap/ca.pem && echo "`)
    // The genuine Platform: the CA checks out and its script runs (stopping at once on the NAME left in place).
    // The line's CA file goes once used (mktemp makes it in $TMPDIR).
    const tmp = join(dir.path, 'tmp')
    mkdirSync(tmp)
    const ok = await sh(e.bootstrapCommand.replace('--node-id w1', '--node-id NAME'), { TMPDIR: tmp })
    expect(ok.stderr).toContain('muster bootstrap: replace NAME with this machine')
    expect(readdirSync(tmp)).toEqual([])

    // The same line, answered by an impostor (a hijacked address): its script would leave a marker.
    const marker = join(dir.path, 'pwned')
    using fake = await impostor({
      '/bootstrap/ca.pem': () => new Response(fake.caPem),
      '/bootstrap/bootstrap.sh': () => new Response(`touch ${marker}\n`),
    })
    const r = await sh(e.bootstrapCommand.replaceAll(genuine, fake.url), { TMPDIR: tmp })
    expect(r.code).not.toBe(0)
    expect(r.stderr).toMatch(/WARNING: 1 computed checksum did NOT match|FAILED/)
    expect(fake.seen).toEqual(['/bootstrap/ca.pem'])
    expect(existsSync(marker)).toBe(false)
    expect(readdirSync(tmp)).toEqual([]) // the impostor's CA file is gone too
  })
})

describeAsRoot('the bootstrap script', () => {
  test('a binary that is not the one the script names: refused at its SHA-256, nothing installed', { timeout: 90_000 }, async () => {
    using dir = tmpDir()
    chmodSync(dir.path, 0o755)
    const real = new Uint8Array(readFileSync(await musterBin()))
    const install = readFileSync(resolve(import.meta.dir, '../../install.sh'), 'utf8')
    const tampered = new Uint8Array(real.length + 1)
    tampered.set(real)
    tampered[real.length] = 0x0a // still a working muster, one byte longer
    let script = ''
    using platform = await impostor({
      '/bootstrap/muster': () => new Response(tampered),
      '/bootstrap/install.sh': () => new Response(install),
      '/bootstrap/bootstrap.sh': () => new Response(script),
    })
    script = bootstrapScript({ url: platform.url, pin: `sha256:${'0'.repeat(64)}`, caPem: platform.caPem, binarySha256: sha256(real), installSha256: sha256(install), arch: unameArch() })
    const root = join(dir.path, 'root')
    mkdirSync(root, { mode: 0o755 })
    const scriptFile = join(dir.path, 'bootstrap.sh')
    await Bun.write(scriptFile, script)
    const r = await sh(`sh ${scriptFile} --node-id w1 --root ${root}`, { MUSTER_ENROLLMENT_TOKEN: 'mjt_aaaaaaaaaaaaaaaa.bbbb' })
    expect(r.stderr).toContain(`checksum mismatch for the muster binary from ${platform.url}: expected ${sha256(real)}, got ${sha256(tampered)}; nothing was installed`)
    expect(r.code).toBe(1)
    expect(platform.seen).toEqual(['/bootstrap/muster'])
    expect(existsSync(join(root, 'etc/muster'))).toBe(false)
    expect(existsSync(join(root, 'usr/local/bin/muster'))).toBe(false)
  })

  test('an install.sh that is not the one the script names: refused at its SHA-256, never run', { timeout: 90_000 }, async () => {
    using dir = tmpDir()
    chmodSync(dir.path, 0o755)
    const real = new Uint8Array(readFileSync(await musterBin()))
    const install = readFileSync(resolve(import.meta.dir, '../../install.sh'), 'utf8')
    const marker = join(dir.path, 'pwned')
    const tampered = install.replace('\n', `\ntouch ${marker}\n`) // one line more, after the shebang
    let script = ''
    using platform = await impostor({
      '/bootstrap/muster': () => new Response(real),
      '/bootstrap/install.sh': () => new Response(tampered),
      '/bootstrap/bootstrap.sh': () => new Response(script),
    })
    script = bootstrapScript({ url: platform.url, pin: `sha256:${'0'.repeat(64)}`, caPem: platform.caPem, binarySha256: sha256(real), installSha256: sha256(install), arch: unameArch() })
    const root = join(dir.path, 'root')
    mkdirSync(root, { mode: 0o755 })
    const scriptFile = join(dir.path, 'bootstrap.sh')
    await Bun.write(scriptFile, script)
    const r = await sh(`sh ${scriptFile} --node-id w1 --root ${root}`, { MUSTER_ENROLLMENT_TOKEN: 'mjt_aaaaaaaaaaaaaaaa.bbbb' })
    expect(r.stderr).toContain(`checksum mismatch for install.sh from ${platform.url}: expected ${sha256(install)}, got ${sha256(tampered)}; nothing was installed`)
    expect(r.code).toBe(1)
    expect(platform.seen).toEqual(['/bootstrap/muster', '/bootstrap/install.sh'])
    expect(existsSync(marker)).toBe(false)
    expect(existsSync(join(root, 'etc/muster'))).toBe(false)
    expect(existsSync(join(root, 'usr/local/bin/muster'))).toBe(false)
  })
})
