// `muster admin ca promote` refuses a CA prepared less than two days ago
// (nodes learn the next pin at their daily trust refresh): to the millisecond,
// on both sides of the edge, through the function the command calls with its
// clock. The e2e test (test/e2e/ca-replace.test.ts) runs the binary
// three days on; this one holds the clock at the edge.
import { expect, test } from 'bun:test'
import { parseCertificate } from '../../src/crypto/x509.ts'
import type { MusterError } from '../../src/errors.ts'
import { PROMOTE_AFTER_MS, prepareNextCa, promoteNextCa } from '../../src/pki/ca-replace.ts'
import { readCa } from '../../src/pki/platform-ca.ts'
import { startPlatform } from '../helpers/platform.ts'

test('promote is refused one millisecond before two days after the prepare, and done at that millisecond', async () => {
  await using p = await startPlatform()
  const vault = p.platform.vault
  const now = Math.floor(Date.now() / 1000) * 1000
  await prepareNextCa(vault, now)
  const next = (await readCa(vault, 'next'))!
  // The prepared CA's certificate starts five minutes before the prepare (whole seconds).
  const ready = parseCertificate(next.certPem).notBefore.getTime() + 5 * 60_000 + PROMOTE_AFTER_MS
  expect(ready).toBe(now + PROMOTE_AFTER_MS)
  const early = await promoteNextCa(vault, ready - 1).then(() => 'promoted', (e: MusterError) => e.code)
  expect(early).toBe('conflict')
  expect((await readCa(vault))!.pin).not.toBe(next.pin)
  expect(await promoteNextCa(vault, ready)).toMatchObject({ current: next.pin })
  expect((await readCa(vault))!.pin).toBe(next.pin)
})
