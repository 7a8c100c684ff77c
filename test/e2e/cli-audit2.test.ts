// The compiled CLI, on what bugs planted by the second self-audit
// (test/mutants/audit2.ts) broke without a test failing: a secret file others
// can read is refused; a password of exactly the minimum length is taken; a
// token on argv warns; a saved login's token goes only to the Platform it was
// saved for; `--all` walks every page.
import { describe, expect, test } from 'bun:test'
import { chmodSync, writeFileSync } from 'node:fs'
import { VERSION } from '../../src/version.ts'
import { runMuster, startServe } from '../helpers/binary.ts'
import { enrollRaw, newCert } from '../helpers/certs.ts'
import { tmpDir } from '../helpers/tmp.ts'

const ARGV_WARNING = 'lands in shell history'

describe('muster CLI (second self-audit)', () => {
  test('secrets, saved logins and paging through the binary', { timeout: 120_000 }, async () => {
    using dir = tmpDir()
    const data = `${dir.path}/data`
    await using serve = await startServe(data, ['--remote-dispatch'])
    const admin = JSON.parse((await runMuster(['admin', 'api-token', '--data-dir', data, '--json'])).stdout) as { token: string }
    const asAdmin = { MUSTER_URL: serve.url, MUSTER_TOKEN: admin.token, XDG_CONFIG_HOME: `${dir.path}/none` }
    const pw = (name: string, text: string, mode: number) => {
      writeFileSync(`${dir.path}/${name}`, `${text}\n`, { mode })
      chmodSync(`${dir.path}/${name}`, mode)
      return `${dir.path}/${name}`
    }

    // A password file others can read is refused before anything is sent; so is one a character short.
    const open = await runMuster(['accounts', 'add', 'ada', '--role', 'viewer', '--password-file', pw('open', 'abcdefghijkl', 0o644)], { env: asAdmin })
    expect(open.code).toBe(1)
    expect(open.stderr).toContain('accessible by group or others')
    const short = await runMuster(['accounts', 'add', 'ada', '--role', 'viewer', '--password-file', pw('short', 'abcdefghijk', 0o600)], { env: asAdmin })
    expect(short.code).toBe(1)
    expect(short.stderr).toContain('at least 12')
    // Exactly 12 characters is enough, and logs in.
    const twelve = pw('twelve', 'abcdefghijkl', 0o600)
    const added = await runMuster(['accounts', 'add', 'ada', '--role', 'viewer', '--password-file', twelve], { env: asAdmin })
    expect(added.code).toBe(0)
    const config = { XDG_CONFIG_HOME: `${dir.path}/config`, MUSTER_TOKEN: '', MUSTER_URL: '' }
    expect((await runMuster(['login', '--platform-url', serve.url, '--identifier', 'ada', '--password-file', twelve], { env: config })).code).toBe(0)
    // A world-readable file is refused for login too (the same reader).
    expect((await runMuster(['login', '--platform-url', serve.url, '--identifier', 'ada', '--password-file', pw('open2', 'abcdefghijkl', 0o604)], { env: config })).code).toBe(1)

    // The saved login's token goes to the Platform it was saved for, and to no other URL.
    const seen: (string | null)[] = []
    const elsewhere = Bun.serve({
      hostname: '127.0.0.1',
      port: 0,
      fetch: (r) => {
        seen.push(r.headers.get('authorization'))
        return Response.json({ error: { code: 'unauthorized', message: 'no' } }, { status: 401 })
      },
    })
    try {
      const mine = await runMuster(['nodes', 'list', '--json'], { env: { ...config, MUSTER_URL: serve.url } })
      expect(mine.code).toBe(0)
      await runMuster(['nodes', 'list', '--json', '--platform-url', `http://127.0.0.1:${elsewhere.port}`], { env: config })
      expect(seen.length).toBeGreaterThan(0)
      expect(seen.filter((h) => h !== null)).toEqual([])
    } finally {
      elsewhere.stop(true)
    }

    // --token on argv works and warns; the same token from the environment does not warn.
    const onArgv = await runMuster(['nodes', 'list', '--json', '--platform-url', serve.url, '--token', admin.token], { env: config })
    expect(onArgv.code).toBe(0)
    expect(onArgv.stderr).toContain(`--token on the command line ${ARGV_WARNING}`)
    const fromEnv = await runMuster(['nodes', 'list', '--json'], { env: asAdmin })
    expect(fromEnv.code).toBe(0)
    expect(fromEnv.stderr).not.toContain(ARGV_WARNING)

    // nodes audit --all walks every page, however small.
    const certPem = (await newCert()).certPem
    for (let i = 0; i < 5; i++) await enrollRaw(serve.url, { token: 'mjt_aaaaaaaaaaaaaaaa.bad', nodeId: `n${i}`, certPem, version: VERSION })
    const all = await runMuster(['nodes', 'audit', '--all', '--limit', '1', '--json'], { env: asAdmin })
    expect(all.code).toBe(0)
    const entries = (JSON.parse(all.stdout) as { entries: { nodeId: string }[]; nextCursor: string | null })
    expect(entries.entries.map((e) => e.nodeId)).toEqual(['n4', 'n3', 'n2', 'n1', 'n0'])
    expect(entries.nextCursor).toBeNull()
  })
})
