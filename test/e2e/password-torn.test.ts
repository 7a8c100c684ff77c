// A password change is the new password and the end of the account's sessions
// and login tokens together (docs/accounts-audit.md): the two writes are one
// transaction, so a change cut short between them (the process killed, the
// store failing) changes nothing, never a new password beside the old
// sessions still working under it (a stolen session that outlives the change
// meant to end it). Through dist/muster: `admin passwd` on a running serve,
// its second write made to fail by a trigger in the store.
import { Database } from 'bun:sqlite'
import { describe, expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { runMuster, startServe } from '../helpers/binary.ts'
import { tmpDir } from '../helpers/tmp.ts'

const NEW = 'a-new-password-123'

describe('admin passwd cut short between its writes', () => {
  test('changes nothing: the old password and its session still work, the new one does not; done again, it ends the session', { timeout: 90_000 }, async () => {
    using dir = tmpDir()
    const data = `${dir.path}/data`
    await using serve = await startServe(data)
    const old = readFileSync(`${data}/platform/initial-superadmin-password`, 'utf8').trim()
    const login = (password: string) => fetch(`${serve.url}/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ identifier: 'superadmin', password }) })
    const first = await login(old)
    expect(first.status).toBe(200)
    const cookie = first.headers.get('set-cookie')!.split(';')[0]!
    const session = () => fetch(`${serve.url}/api/v1/whoami`, { headers: { cookie } }).then((r) => r.status)
    expect(await session()).toBe(200)

    // The end of the sessions fails (as a kill between the two writes would leave it undone).
    const db = new Database(`${data}/muster.db`)
    db.run("CREATE TRIGGER torn BEFORE DELETE ON sessions BEGIN SELECT RAISE(ABORT, 'cut short between the writes'); END")
    const torn = await runMuster(['admin', 'passwd', 'superadmin', '--data-dir', data], { stdin: `${NEW}\n` })
    expect(torn.code).not.toBe(0)
    expect(torn.stderr).not.toMatch(/^\s+at /m)
    expect({ newPassword: (await login(NEW)).status, oldPassword: (await login(old)).status, session: await session() }).toEqual({ newPassword: 401, oldPassword: 200, session: 200 })

    // Done again once the store is whole: the new password, and the session ends with the old one.
    db.run('DROP TRIGGER torn')
    db.close()
    const done = await runMuster(['admin', 'passwd', 'superadmin', '--data-dir', data], { stdin: `${NEW}\n` })
    expect(done.code).toBe(0)
    expect({ newPassword: (await login(NEW)).status, oldPassword: (await login(old)).status, session: await session() }).toEqual({ newPassword: 200, oldPassword: 401, session: 401 })
  })
})
