// Through dist/muster on PostgreSQL: the store's password is
// on no process's command line. The URL comes from $MUSTER_DATABASE_URL or
// --database-file (0600); --database URL still works but warns, and neither
// serve nor any engine it runs (the first, or one a SIGHUP swaps in) shows the
// password in /proc/PID/cmdline. Engines keep the URL from their children.
import { describe, expect, test } from 'bun:test'
import { chmodSync, copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { childPids } from '../../src/swap/kill.ts'
import { runMuster, startServe } from '../helpers/binary.ts'
import { freshDatabase } from '../helpers/postgres.ts'
import { tmpDir, waitFor } from '../helpers/tmp.ts'

/** The test database's URL with a password in it (the throwaway cluster trusts local connections and ignores it). */
async function databaseWithPassword() {
  const db = await freshDatabase()
  const url = new URL(db.url)
  if (!url.password) url.password = 'Pw-s3cret-0f-the-store'
  return { ...db, url: url.toString(), password: decodeURIComponent(url.password) }
}

const cmdline = (pid: number) => readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ')
const engineOf = (pid: number) => waitFor(() => (childPids(pid).length === 1 ? childPids(pid)[0] : undefined), { what: 'one engine' })

describe.skipIf(process.platform !== 'linux')('the database password', () => {
  test('from $MUSTER_DATABASE_URL or --database-file: on no argv, of serve or of an engine, across a swap', { timeout: 120_000 }, async () => {
    const db = await databaseWithPassword()
    using dir = tmpDir()
    try {
      {
        await using serve = await startServe(`${dir.path}/a`, [], { MUSTER_DATABASE_URL: db.url, MUSTER_SWAP_LINGER_SECONDS: '0' })
        const engine = await engineOf(serve.proc.pid)
        for (const pid of [serve.proc.pid, engine]) expect(cmdline(pid)).not.toContain(db.password)
        expect((await fetch(`${serve.url}/healthz`)).status).toBe(200)
        expect(serve.log()).not.toContain('--database carries')
        // A swap runs the engine again from serve's command line: still no password there.
        // (A SIGHUP before serve has heard that its engine serves replaces nothing: send it until one does.)
        await waitFor(
          async () => {
            const refusals = serve.log().split('still starting').length
            process.kill(serve.proc.pid, 'SIGHUP')
            await waitFor(() => serve.log().includes('SIGHUP: replacing') || serve.log().split('still starting').length > refusals, { what: 'serve to take the SIGHUP' })
            return serve.log().includes('SIGHUP: replacing')
          },
          { what: 'an engine swap to start' },
        )
        await serve.waitForLog(/engine swap complete/, 60_000)
        const next = await engineOf(serve.proc.pid)
        expect(next).not.toBe(engine)
        expect(cmdline(next)).not.toContain(db.password)
        expect((await fetch(`${serve.url}/healthz`)).status).toBe(200)
      }
      // --database-file: the same store, given by a file only its owner reads.
      const file = `${dir.path}/database-url`
      writeFileSync(file, `${db.url}\n`, { mode: 0o644 })
      chmodSync(file, 0o644)
      const open = await runMuster(['serve', '--data-dir', `${dir.path}/b`, '--port', '0', '--database-file', file], { timeoutMs: 30_000 })
      expect(open.code).not.toBe(0)
      expect(open.stderr).toContain(`chmod 600 ${file}`)
      expect(open.stderr).not.toContain(db.password)
      chmodSync(file, 0o600)
      // A second Platform on the same store carries the first one's master key.
      mkdirSync(`${dir.path}/b/platform`, { recursive: true, mode: 0o700 })
      copyFileSync(`${dir.path}/a/platform/master.key`, `${dir.path}/b/platform/master.key`)
      await using serve = await startServe(`${dir.path}/b`, ['--database-file', file])
      const engine = await engineOf(serve.proc.pid)
      for (const pid of [serve.proc.pid, engine]) expect(cmdline(pid)).not.toContain(db.password)
      // The Platform is on PostgreSQL: host-side commands find it through the data directory (platform/database-url, 0600).
      const token = await runMuster(['admin', 'api-token', '--data-dir', `${dir.path}/b`, '--json'])
      expect(token.code).toBe(0)
      expect((await fetch(`${serve.url}/api/v1/nodes`, { headers: { authorization: `Bearer ${JSON.parse(token.stdout).token}` } })).status).toBe(200)
    } finally {
      await db.drop()
    }
  })

  test('--database URL with a password works, warns in one line, and the password leaves every command line', { timeout: 120_000 }, async () => {
    const db = await databaseWithPassword()
    using dir = tmpDir()
    try {
      await using serve = await startServe(`${dir.path}/c`, ['--database', db.url])
      const engine = await engineOf(serve.proc.pid)
      expect(cmdline(engine)).not.toContain(db.password)
      expect(cmdline(engine)).not.toContain('--database')
      // serve hides it in its own command line as soon as it runs (it was visible until then: hence the warning).
      expect(cmdline(serve.proc.pid)).not.toContain(db.password)
      expect(cmdline(serve.proc.pid)).toContain('--database')
      const warnings = serve.log().split('\n').filter((l) => l.includes('--database carries'))
      expect(warnings).toHaveLength(1)
      expect(warnings[0]).toContain('MUSTER_DATABASE_URL')
      expect(serve.log()).not.toContain(db.password)
      expect((await fetch(`${serve.url}/healthz`)).status).toBe(200)
      // admin migrate-store's --to warns the same way, and never repeats the password.
      const migrate = await runMuster(['admin', 'migrate-store', '--data-dir', `${dir.path}/nothing`, '--to', db.url], { timeoutMs: 30_000 })
      expect(migrate.stderr.split('\n').filter((l) => l.includes('--to carries the database password'))).toHaveLength(1)
      expect(migrate.stderr + migrate.stdout).not.toContain(db.password)
      // The engine keeps the URL out of its own environment (children inherit nothing): /proc/PID/environ is the start's, so only serve's variable is checked absent.
      expect(readFileSync(`/proc/${serve.proc.pid}/environ`, 'utf8')).not.toContain(db.password)
    } finally {
      await db.drop()
    }
  })
})
