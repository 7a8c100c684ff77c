// Text from outside reaches the operator's terminal escaped (docs/security.md,
// "What reaches a terminal"), through dist/muster: an anonymous DELETE with
// CR, LF and escape sequences in its path used to land raw in the audit's
// target, and `muster audit` printed it raw (the attacker's row erased, a
// forged row shown). Now the path target is shape-checked where it enters,
// and every value the CLI prints passes through commands/_out.ts — rows an
// older build wrote, and a hostile server's error messages, too.
import { Database } from 'bun:sqlite'
import { describe, expect, test } from 'bun:test'
import { readdirSync, readFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { clean, cleanLines, jsonText } from '../../commands/_out.ts'
import { runMuster, startServe } from '../helpers/binary.ts'
import { tmpDir } from '../helpers/tmp.ts'

/** Any character that moves a terminal's cursor, starts a sequence, or reorders text (TAB and LF are checked apart). */
const RAW_CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069\ufeff]/
const HOSTILE = '\r\u001b[2K\u001b[1A\n2026-01-01T00:00:00.000Z  superadmin (session)  10.0.0.1  account.add  ops-backup  ok\u009b2J\u202edecoy\u007f\t'

describe('the escaping function', () => {
  test('a value becomes one inert line; composed text keeps its own newlines; JSON stays the same value', () => {
    const v = clean(HOSTILE)
    expect(v).not.toMatch(RAW_CONTROL)
    expect(v).not.toContain('\n')
    expect(v).not.toContain('\t')
    expect(v.startsWith('\\r\\e[2K\\e[1A\\n2026')).toBe(true)
    expect(v).toContain('\\x9b2J\\u{202e}decoy\\x7f\\t')
    expect(clean('worker-1 ready, 10.0.0.1:7381 Ünïcode ✓')).toBe('worker-1 ready, 10.0.0.1:7381 Ünïcode ✓')
    expect(cleanLines(`line one\n${HOSTILE}`).split('\n')).toHaveLength(3)
    expect(cleanLines(HOSTILE)).not.toMatch(RAW_CONTROL)
    const json = jsonText({ target: HOSTILE }, 2)
    expect(json).not.toMatch(RAW_CONTROL)
    expect(JSON.parse(json)).toEqual({ target: HOSTILE })
  })

  test('commands print only through commands/_out.ts (no direct write to stdout or stderr)', () => {
    const root = resolve(import.meta.dir, '../../commands')
    const offenders: string[] = []
    const walk = (dir: string): void => {
      for (const e of readdirSync(dir, { withFileTypes: true })) {
        const path = join(dir, e.name)
        if (e.isDirectory()) walk(path)
        else if (e.name.endsWith('.ts') && !['_out.ts', '_main.ts'].includes(e.name)) {
          readFileSync(path, 'utf8').split('\n').forEach((line, i) => {
            if (/process\.std(out|err)\.write\(|\bconsole\.(log|error|warn|info)\(/.test(line)) offenders.push(`${path}:${i + 1}`)
          })
        }
      }
    }
    walk(root)
    expect(offenders).toEqual([])
  })
})

describe('terminal escapes through dist/muster', () => {
  test('an anonymous DELETE with escapes in its path, and a row an older build wrote, print inert in `muster audit`', { timeout: 90_000 }, async () => {
    using dir = tmpDir()
    const data = `${dir.path}/data`
    await using serve = await startServe(data)
    const token = (JSON.parse((await runMuster(['admin', 'api-token', '--data-dir', data, '--json'])).stdout) as { token: string }).token
    const env = { MUSTER_URL: serve.url, MUSTER_TOKEN: token }

    // 1. The attack: no credential, a path that percent-decodes to CR, ESC [2K (erase the line), LF and a forged row.
    const path = `/api/v1/accounts/${encodeURIComponent(HOSTILE)}`
    const res = await fetch(`${serve.url}${path}`, { method: 'DELETE' })
    expect(res.status).toBe(401)
    const entries = (JSON.parse((await runMuster(['audit', '--json'], { env })).stdout) as { entries: { action: string; target: string | null; principal: string }[] }).entries
    const attempt = entries.find((e) => e.action === 'account.remove')!
    expect(attempt).toMatchObject({ target: '(not a name)', principal: '(unknown)' })

    // 2. A row written before the shape check existed (an upgraded store keeps it): the CLI still prints it inert.
    const db = new Database(join(data, 'muster.db'))
    db.run(
      `INSERT INTO audit_log (at, budget, principal, principal_kind, token_id, source, action, target, outcome, detail) VALUES (?1, 'refusals', ?2, 'anonymous', NULL, '10.0.0.9', 'account.remove', ?3, 'denied', ?4)`,
      [Date.now(), `evil${HOSTILE}`, HOSTILE, HOSTILE],
    )
    db.close()
    for (const args of [['audit'], ['audit', '--jsonl'], ['audit', '--json'], ['audit', '--action', 'account']]) {
      const r = await runMuster(args, { env })
      expect(r.code).toBe(0)
      expect(r.stdout).not.toMatch(RAW_CONTROL)
      expect(r.stdout).not.toContain('\t')
      // No forged row: exactly one line per entry (and the header of the table).
      const lines = r.stdout.trimEnd().split('\n')
      if (args.includes('--jsonl')) expect(lines.every((l) => JSON.parse(l))).toBe(true)
      if (args.length === 1 || args.includes('--action')) expect(lines.filter((l) => l.includes('superadmin (session)'))).toHaveLength(1)
    }
    const listed = (JSON.parse((await runMuster(['audit', '--json'], { env })).stdout) as { entries: { target: string | null }[] }).entries
    expect(listed.some((e) => e.target === HOSTILE)).toBe(true) // the JSON keeps the value exactly, escaped as JSON
  })

  test('an office registering with escapes for a version is refused; `federation offices` prints inert', { timeout: 60_000 }, async () => {
    using dir = tmpDir()
    const data = `${dir.path}/controller`
    await using serve = await startServe(data)
    const admin = (JSON.parse((await runMuster(['admin', 'api-token', '--data-dir', data, '--json'])).stdout) as { token: string }).token
    const env = { MUSTER_URL: serve.url, MUSTER_TOKEN: admin }
    const { token } = JSON.parse((await runMuster(['federation', 'mint', 'office-a', '--json'], { env })).stdout) as { token: string }
    // A (compromised) office holding a real token registers with 64 characters of escapes as its version.
    const nonce = Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString('base64url')
    const register = (version: string) =>
      fetch(`${serve.url}/api/v1/federation/register`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ token, officeId: 'office-a', advertiseUrl: 'http://127.0.0.1:9', nonce, version }) })
    const hostile = '\u001b[2J\u001b[H\r1.0.0\n\u009b1m'.padEnd(64, '\u001b')
    const refused = await register(hostile)
    expect(refused.status).toBe(400)
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('invalid-request')
    expect((await register('9.9.9-rc.1')).status).toBe(200)
    // A version an older build stored raw (the controller keeps it across an upgrade) still prints inert.
    const db = new Database(join(data, 'muster.db'))
    db.run("INSERT INTO federation_offices (office_id, created_at, version, advertise_url) VALUES ('office-b', ?1, ?2, 'http://127.0.0.1:9')", [Date.now(), hostile])
    db.close()
    const listed = await runMuster(['federation', 'offices'], { env })
    expect(listed.code).toBe(0)
    expect(listed.stdout).toContain('9.9.9-rc.1')
    expect(listed.stdout).not.toMatch(RAW_CONTROL)
    expect(listed.stdout.trimEnd().split('\n')).toHaveLength(3)
  })

  test("a hostile server's error message prints as one inert line", { timeout: 30_000 }, async () => {
    await using server = Bun.serve({
      port: 0,
      hostname: '127.0.0.1',
      fetch: () => Response.json({ error: { code: 'not-found', message: `No such node.${HOSTILE}` } }, { status: 404 }),
    })
    const r = await runMuster(['nodes', 'list'], { env: { MUSTER_URL: `http://127.0.0.1:${server.port}`, MUSTER_TOKEN: `mat_${'a'.repeat(16)}.${'A'.repeat(43)}` } })
    expect(r.code).toBe(1)
    expect(r.stderr).toContain('No such node.\\r\\e[2K')
    expect(r.stderr).not.toMatch(RAW_CONTROL)
    expect(r.stderr.trimEnd().split('\n')).toHaveLength(1)
  })
})
