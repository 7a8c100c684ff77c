// A failed connection is explained in words that name the fix.
import { expect, test } from 'bun:test'
import { explainNetworkError } from '../../src/client/net-errors.ts'

test('no route to the host or network is said so, not passed on as library text', () => {
  for (const code of ['EHOSTUNREACH', 'ENETUNREACH']) {
    const f = explainNetworkError('https://10.0.0.9:7443', Object.assign(new Error(`${code}: Unable to connect. Is the computer able to access the url?`), { code }))
    expect(f.text).toBe('no route to that address (is the address right, and does this machine reach its network?)')
  }
  // Bun's node:tls says ECONNREFUSED for a host with no route as well: the sentence covers both
  expect(explainNetworkError('https://10.0.0.9:7443', Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' })).text).toContain('connection refused or no route to it')
})
