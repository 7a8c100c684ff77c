// Connecting providers through the Platform's API: proved by a list call
// before being kept, sealed at rest, never returned or logged; permissions.
import { describe, expect, test } from 'bun:test'
import { existsSync, readFileSync } from 'node:fs'
import { cloudOf } from '../../src/cloud/service.ts'
import { log } from '../../src/log.ts'
import { startPlatform } from '../helpers/platform.ts'
import { startHetznerFake } from '../fakes/hetzner.ts'
import { startDigitalOceanFake } from '../fakes/digitalocean.ts'

function captureLog() {
  const lines: string[] = []
  const level = log.level
  const reporters = log.options.reporters
  log.level = 5
  log.setReporters([{ log: (o: { args: unknown[] }) => void lines.push(o.args.map(String).join(' ')) }])
  return { lines, [Symbol.dispose]: () => (log.setReporters(reporters), (log.level = level)) }
}

describe('cloud connections', () => {
  test('wrong credentials are refused and nothing is kept; right ones are sealed, never returned or logged', async () => {
    await using hz = startHetznerFake()
    await using p = await startPlatform()
    using logged = captureLog()
    cloudOf(p.platform).endpoints.hetzner = hz.url

    const before = await p.client.cloud.status()
    expect(before.providers.map((x) => [x.provider, x.connected])).toEqual([['hetzner', false], ['digitalocean', false], ['aws', false], ['azure', false], ['gcp', false]])
    expect(before.provisioning).toEqual({ available: false, reason: expect.stringContaining('--enrollment-port') })

    const refused = await p.client.cloud.connect('hetzner', 'wrong-token-value').catch((e: unknown) => e)
    expect(refused).toMatchObject({ code: 'cloud-credentials-refused', detail: { status: 400 } })
    expect((await p.client.cloud.status()).providers[0]!.connected).toBe(false)
    expect(await p.platform.store.get('SELECT COUNT(*) AS n FROM cloud_connections')).toEqual({ n: 0 })

    const c = await p.client.cloud.connect('hetzner', `${hz.token}\n`)
    expect(c).toMatchObject({ provider: 'hetzner', connected: true, connectedBy: `token:${p.token.slice(4, 20)}`, machines: 0 })
    expect(JSON.stringify(c)).not.toContain(hz.token)
    const status = await p.client.cloud.status()
    expect(status.providers[0]).toMatchObject({ provider: 'hetzner', connected: true })
    expect(JSON.stringify(status)).not.toContain(hz.token)
    // the list call really reached the provider with that token
    expect(hz.calls.filter((x) => x === 'GET /v1/servers').length).toBe(2)

    // sealed at rest: neither the row nor the database files hold the token
    const row = (await p.platform.store.get<{ sealed: Uint8Array }>('SELECT sealed FROM cloud_connections'))!
    expect(Buffer.from(row.sealed).toString('latin1')).not.toContain(hz.token)
    await p.platform.store.script('PRAGMA wal_checkpoint(FULL)')
    // the database file must be there and hold the sealed row; the WAL is checked when SQLite keeps one
    const db = readFileSync(`${p.dataDir}/muster.db`)
    expect(db.length).toBeGreaterThan(4096)
    expect(db.toString('latin1')).toContain('cloud_connections')
    expect(db.includes(Buffer.from(row.sealed))).toBe(true)
    expect(db.toString('latin1')).not.toContain(hz.token)
    if (existsSync(`${p.dataDir}/muster.db-wal`)) expect(readFileSync(`${p.dataDir}/muster.db-wal`).toString('latin1')).not.toContain(hz.token)

    expect((await p.client.cloud.regions('hetzner')).regions.map((r) => r.id)).toEqual(['fsn1', 'nbg1', 'hel1'])
    const sizes = await p.client.cloud.sizes('hetzner', 'fsn1')
    // x86 only (no cax*), and not what Hetzner deprecates in fsn1 (cpx11 there, by locations[].deprecation)
    expect(sizes.sizes.map((s) => s.id)).toEqual(['cx22', 'cx32'])
    expect((await p.client.cloud.sizes('hetzner', 'nbg1')).sizes.map((s) => s.id)).toEqual(['cx22', 'cx32', 'cpx11'])
    expect(sizes.sizes[0]).toEqual({ id: 'cx22', cpus: 2, memoryMB: 4096, diskGB: 40, priceMonthly: 4.5101, currency: 'EUR' })
    expect(logged.lines.join('\n')).toContain('hetzner connected')
    expect(logged.lines.join('\n')).not.toContain(hz.token)

    expect(await p.client.cloud.disconnect('hetzner')).toEqual({ provider: 'hetzner', connected: false })
    await expect(p.client.cloud.regions('hetzner')).rejects.toMatchObject({ code: 'cloud-not-connected' })
  })

  test('digitalocean takes a bare token or {"token"}; bodies are validated; permissions hold', async () => {
    await using dofake = startDigitalOceanFake()
    await using p = await startPlatform()
    cloudOf(p.platform).endpoints.digitalocean = dofake.url
    const viewer = p.clientWith((await p.platform.auth.mintApiToken({ name: 'v', role: 'viewer' })).token)
    await expect(viewer.cloud.connect('digitalocean', dofake.token)).rejects.toMatchObject({ code: 'forbidden' })
    await expect(p.clientWith().cloud.status()).rejects.toMatchObject({ code: 'unauthorized' })
    await expect(p.client.cloud.connect('nimbus', 'x')).rejects.toMatchObject({ code: 'invalid-request', detail: { field: 'provider' } })
    await expect(p.client.cloud.connect('aws', 'not json')).rejects.toMatchObject({ code: 'invalid-request', detail: { field: 'credentials' } })
    await expect(p.client.cloud.connect('aws', { accessKeyId: 'AKIAEXAMPLE12345' })).rejects.toMatchObject({ code: 'invalid-request', detail: { field: 'credentials.secretAccessKey' } })
    expect((await p.client.cloud.connect('digitalocean', JSON.stringify({ token: dofake.token }))).connected).toBe(true)
    expect((await viewer.cloud.status()).providers[1]).toMatchObject({ provider: 'digitalocean', connected: true })
    const doSizes = (await viewer.cloud.sizes('digitalocean', 'ams3')).sizes
    expect(doSizes.map((s) => s.id)).toEqual(['s-1vcpu-1gb', 's-2vcpu-2gb'])
    // DigitalOcean's price_monthly is in US dollars
    expect(doSizes[0]).toEqual({ id: 's-1vcpu-1gb', cpus: 1, memoryMB: 1024, diskGB: 25, priceMonthly: 6, currency: 'USD' })
    await expect(viewer.cloud.disconnect('digitalocean')).rejects.toMatchObject({ code: 'forbidden' })
    await expect(p.client.cloud.sizes('digitalocean', 'bad region!')).rejects.toMatchObject({ code: 'invalid-request', detail: { field: 'region' } })
  })
})
