// The SDK as a package user imports it, against a real Platform.
import { describe, expect, test } from 'bun:test'
import { createClient, MusterError } from 'muster/client'
import { startPlatform } from '../helpers/platform.ts'

describe('muster/client', () => {
  test('is importable by package name and raises coded errors', async () => {
    await using p = await startPlatform()
    const client = createClient({ url: p.url, token: p.token })
    expect((await client.health()).ok).toBe(true)
    expect((await client.nodes.list()).nodes.map((n) => n.name)).toEqual([]) // no local node unless serve --local-node
    const anonymous = createClient({ url: p.url })
    const err = await anonymous.nodes.list().catch((e: unknown) => e)
    expect(err).toBeInstanceOf(MusterError)
    expect(err).toMatchObject({ code: 'unauthorized' })
    const down = await createClient({ url: 'http://127.0.0.1:9' }).health().catch((e: unknown) => e)
    expect(down).toMatchObject({ code: 'platform-unreachable' })
  })
})
