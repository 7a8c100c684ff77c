// Through dist/muster: `admin api-token` on a joined
// office used to mint a superadmin token with no record. Now it is refused
// ("the local door is closed") unless --break-glass, which records a
// break-glass for the account the token acts for and reports it to the
// controller, like `admin break-glass` (docs/security.md).
import { describe, expect, test } from 'bun:test'
import { runMuster, startMuster, startServe } from '../helpers/binary.ts'
import { freePort } from '../federation/_helpers.ts'
import { tmpDir, waitFor } from '../helpers/tmp.ts'

describe('the closed local door through dist/muster', () => {
  test('admin api-token on a joined office: refused, or minted with a recorded and reported break-glass', { timeout: 90_000 }, async () => {
    using dir = tmpDir()
    const FAST = { MUSTER_FEDERATION_HEARTBEAT_SECONDS: '0.2' }
    await using controller = await startServe(`${dir.path}/controller`, [], FAST)
    const { token: admin } = JSON.parse((await runMuster(['admin', 'api-token', '--data-dir', `${dir.path}/controller`, '--json'])).stdout) as { token: string }
    const env = { MUSTER_URL: controller.url, MUSTER_TOKEN: admin }
    const reports = async () => (JSON.parse((await runMuster(['federation', 'break-glass', '--json'], { env })).stdout) as { reports: { officeId: string; account: string | null }[] }).reports
    const { token } = JSON.parse((await runMuster(['federation', 'mint', 'office-a', '--json'], { env })).stdout) as { token: string }
    const port = await freePort()
    const office = `${dir.path}/office-a`
    await using serve = await startMuster(['serve', '--data-dir', office, '--port', String(port)], {
      env: { ...FAST, MUSTER_CONTROLLER_URL: controller.url, MUSTER_ADVERTISE_URL: `http://127.0.0.1:${port}`, MUSTER_JOIN_TOKEN: token },
    })
    await serve.waitForLog(/listening on/)
    await waitFor(async () => (JSON.parse((await runMuster(['federation', 'offices', '--json'], { env })).stdout) as { offices: { fresh: boolean }[] }).offices[0]?.fresh, { what: 'office-a fresh', timeoutMs: 15_000 })

    const refused = await runMuster(['admin', 'api-token', '--data-dir', office, '--json'])
    expect(refused.code).toBe(1)
    expect(refused.stderr).toContain('the local door is closed')
    expect(refused.stdout).not.toContain('mat_')
    expect(await reports()).toEqual([])

    const minted = await runMuster(['admin', 'api-token', '--data-dir', office, '--break-glass', '--json'])
    expect(minted.code).toBe(0)
    const out = JSON.parse(minted.stdout) as { token: string; role: string; breakGlassRecorded: boolean }
    expect(out).toMatchObject({ role: 'superadmin', breakGlassRecorded: true })
    const who = await fetch(`http://127.0.0.1:${port}/api/v1/whoami`, { headers: { authorization: `Bearer ${out.token}` } })
    expect(await who.json()).toMatchObject({ account: 'superadmin', role: 'superadmin' })
    // reported to the controller with the office's next heartbeat, for the account the token acts for
    const seen = await waitFor(async () => (await reports()).at(0), { what: 'break-glass reported', timeoutMs: 15_000 })
    expect(seen).toMatchObject({ officeId: 'office-a', account: 'superadmin' })
    const authority = await fetch(`http://127.0.0.1:${port}/api/v1/office/local-authority`, { headers: { authorization: `Bearer ${out.token}` } })
    expect(await authority.json()).toMatchObject({ joined: true, localLoginAllowed: true, breakGlass: { account: 'superadmin' } })

    // a Platform that never joined has no door to close: no flag needed, nothing recorded
    const plain = await runMuster(['admin', 'api-token', '--data-dir', `${dir.path}/controller`, '--role', 'viewer', '--json'])
    expect(plain.code).toBe(0)
    expect(JSON.parse(plain.stdout)).toMatchObject({ breakGlassRecorded: false })
  })
})
